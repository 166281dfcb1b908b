//! The forge against real files of the same version: a forged database and a data file written by
//! SQL Server of the same version (2016 = 852, 2019 = 904, from the corpus manifest) must agree on
//! everything the reader looks at — the page types at the fixed page numbers of a file, the page
//! header conventions of each page type, the file header and boot page fields, the allocation
//! units, physical layouts (sysrscols) and column names of the system base tables, and the rows of
//! sysschobjs that name them. A forged file that only our own reader accepts would prove nothing.

#[path = "../../mdfkit/tests/common/mod.rs"]
mod corpus_common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mdfkit::catalog::rowset::PhysicalColumn;
use mdfkit::page::allocation::PFS_INTERVAL;
use mdfkit::page::{PageHeader, PageId, PageType, FLAG_CHECKSUM};
use mdfkit::Database;
use mdfkit_forge::{samples, Version};

/// System objects have ids below 100.
const LAST_SYSTEM_OBJECT_ID: i32 = 100;
/// The pages at fixed places in a primary file: file header, PFS, GAM, SGAM, two unused pages,
/// DCM, BCM, boot page. (Page 8 is an ordinary page SQL Server gives to a system table.)
const FIXED_PAGES: [u32; 9] = [0, 1, 2, 3, 4, 5, 6, 7, 9];

/// The primary data files of the corpus written by (and never upgraded from an older) `version`.
fn corpus_files(dir: &Path, version: u16) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).expect("MANIFEST.tsv");
    let mut lines = manifest.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("manifest column {name}"));
    let (file, kind, dbi, create) = (col("file"), col("kind"), col("dbi_version"), col("create_version"));
    let wanted = version.to_string();
    lines
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .filter(|f| f.len() > create && f[kind] == "mdf" && f[dbi] == wanted && f[create] == wanted)
        .map(|f| dir.join(f[file]))
        .collect()
}

fn forged(version: Version) -> Database {
    let mut spec = samples::shop();
    spec.version = version;
    let files = mdfkit_forge::forge(&spec).expect("forge");
    let source = mdfkit::source::DataFiles::from_memory(files.into_iter().map(|f| (f.name, f.bytes)).collect())
        .expect("forged files are data files");
    Database::from_source(Arc::new(source)).expect("forged database opens")
}

/// The header of a page, `None` for a page never written (all zeros: its address does not check).
fn header(db: &Database, page: u32) -> Option<PageHeader> {
    db.reader().read(PageId { file: 1, page }).ok().map(|p| *p.header())
}

/// What the reader relies on in a page header, per page type: the header version, whether a
/// checksum is carried, and the level (0 for every page type but index pages). (The type flag
/// bits, which the reader ignores, differ: SQL Server 2016 sets 1 on PFS pages, 2019 does not.)
fn header_conventions(db: &Database, pages: u32) -> BTreeMap<String, BTreeSet<(u8, bool, u8)>> {
    let mut seen: BTreeMap<String, BTreeSet<(u8, bool, u8)>> = BTreeMap::new();
    for page in 0..pages {
        let Some(h) = header(db, page) else { continue };
        let level = if h.page_type == PageType::Index { 0 } else { h.level };
        seen.entry(h.page_type.name().into_owned()).or_default().insert((
            h.header_version,
            h.flag_bits & FLAG_CHECKSUM != 0,
            level,
        ));
    }
    seen
}

/// A system rowset's physical columns, without the collation (a database's own collation, which
/// differs from file to file).
fn system_layouts(db: &Database) -> BTreeMap<(i32, i32), Vec<PhysicalColumn>> {
    let base = db.catalog().base();
    let mut layouts = BTreeMap::new();
    for (&(object_id, index_id), rowsets) in &base.rowsets_by_owner {
        if object_id >= LAST_SYSTEM_OBJECT_ID || object_id <= 0 {
            continue;
        }
        let Some(layout) = rowsets.first().and_then(|r| base.layouts.get(r)) else { continue };
        let columns = layout.columns.iter().map(|c| PhysicalColumn { collation_id: 0, ..c.clone() }).collect();
        layouts.insert((object_id, index_id), columns);
    }
    layouts
}

/// (allocation unit id, kind, owner rowset id) of the system tables' allocation units.
fn system_units(db: &Database) -> BTreeSet<(i64, u8, i64)> {
    let base = db.catalog().base();
    let system_rowsets: BTreeSet<i64> = base
        .rowsets_by_owner
        .iter()
        .filter(|((object_id, _), _)| (1..LAST_SYSTEM_OBJECT_ID).contains(object_id))
        .flat_map(|(_, rowsets)| rowsets.iter().copied())
        .collect();
    base.allocation_units
        .iter()
        .filter(|u| system_rowsets.contains(&u.owner_id))
        .map(|u| (u.id, u.kind, u.owner_id))
        .collect()
}

/// (id, name, type) of the system base tables in sysschobjs.
fn system_objects(db: &Database) -> BTreeSet<(i64, String, String)> {
    db.catalog()
        .objects()
        .iter()
        .filter(|o| (1..i64::from(LAST_SYSTEM_OBJECT_ID)).contains(&o.int("id")))
        .map(|o| (o.int("id"), o.text("name").to_string(), o.text("type").trim().to_string()))
        .collect()
}

/// How user tables are described, as sets of conventions a forged file must draw from: sysrscols
/// (the max in-row length of each type, for the types SQL Server's files use), sysrowsets (index id, status), sysallocunits (type,
/// status), and the PFS bits (allocated, mixed extent, IAM page) of each page type.
#[derive(Default)]
struct UserConventions {
    /// (type id, is a `(max)` type) → max in-row lengths.
    columns: BTreeMap<(u8, bool), BTreeSet<i16>>,
    rowsets: BTreeSet<(i64, i64)>,
    units: BTreeSet<(i64, i64)>,
    pfs: BTreeSet<(String, u8)>,
}

/// PFS bits the reader and `check` look at: 0x40 allocated, 0x20 mixed extent, 0x10 IAM page.
const PFS_ALLOCATION_BITS: u8 = 0x70;

impl UserConventions {
    fn add(&mut self, db: &Database) {
        let base = db.catalog().base();
        for (&(object_id, _), rowsets) in &base.rowsets_by_owner {
            if object_id < LAST_SYSTEM_OBJECT_ID {
                continue;
            }
            for layout in rowsets.iter().filter_map(|r| base.layouts.get(r)) {
                for c in &layout.columns {
                    let key = (c.type_info.sql_type.id(), c.type_info.max_length == -1);
                    self.columns.entry(key).or_default().insert(c.max_inrow_length);
                }
            }
        }
        let rowsets = db.catalog().read_base_table("sysrowsets").expect("sysrowsets");
        self.rowsets.extend(
            rowsets
                .iter()
                .filter(|r| r.int("idmajor") >= i64::from(LAST_SYSTEM_OBJECT_ID) && r.int("ownertype") == 1)
                .map(|r| (r.int("idminor"), r.int("status"))),
        );
        let user_rowsets: BTreeSet<i64> = base
            .rowsets_by_owner
            .iter()
            .filter(|((object_id, _), _)| *object_id >= LAST_SYSTEM_OBJECT_ID)
            .flat_map(|(_, rowsets)| rowsets.iter().copied())
            .collect();
        let units = db.catalog().read_base_table("sysallocunits").expect("sysallocunits");
        self.units.extend(
            units.iter().filter(|u| user_rowsets.contains(&u.int("ownerid"))).map(|u| (u.int("type"), u.int("status"))),
        );
        let pages = db.file_headers()[0].size_pages as u32;
        let mut pfs_record: Option<(u32, Vec<u8>)> = None;
        for page in 0..pages {
            let Some(h) = header(db, page) else { continue };
            let pfs_page = (page / PFS_INTERVAL * PFS_INTERVAL).max(1);
            if pfs_record.as_ref().is_none_or(|(at, _)| *at != pfs_page) {
                let pfs = db.reader().read(PageId { file: 1, page: pfs_page }).expect("PFS page");
                let record = pfs.slot_bytes(0).expect("PFS record").expect("PFS record").to_vec();
                pfs_record = Some((pfs_page, record));
            }
            let Some((_, record)) = &pfs_record else { continue };
            let byte = record.get(4 + (page % PFS_INTERVAL) as usize).copied().unwrap_or(0);
            self.pfs.insert((h.page_type.name().into_owned(), byte & PFS_ALLOCATION_BITS));
        }
    }

    /// Panics on the first convention of `self` (the forge's) that `real` (SQL Server's) lacks.
    fn assert_within(&self, real: &UserConventions, number: u16) {
        let compared = [self.columns.len(), self.rowsets.len(), self.units.len(), self.pfs.len()];
        assert!(compared.iter().all(|&n| n > 0), "forge {number}: nothing to compare: {compared:?}");
        eprintln!(
            "forge {number}: user table conventions agree: {} column types, {} rowset kinds, {} allocation unit kinds, \
             {} PFS kinds",
            compared[0], compared[1], compared[2], compared[3]
        );
        let missing = |what: &str, forged: Vec<String>| {
            assert!(forged.is_empty(), "forge {number}: {what} that no SQL Server {number} file has: {forged:?}");
        };
        let columns = self
            .columns
            .iter()
            .filter_map(|(key, lengths)| Some((key, diff(lengths, real.columns.get(key)?))))
            .filter(|(_, lengths)| !lengths.is_empty())
            .map(|(key, lengths)| format!("{key:?}: {lengths:?}"))
            .collect();
        missing("user sysrscols max in-row lengths ((type id, is max): lengths)", columns);
        missing("user sysrowsets (index id, status)", diff(&self.rowsets, &real.rowsets));
        missing("user sysallocunits (type, status)", diff(&self.units, &real.units));
        missing("PFS allocation bits per page type", diff(&self.pfs, &real.pfs));
    }
}

fn diff<T: Ord + std::fmt::Debug>(forged: &BTreeSet<T>, real: &BTreeSet<T>) -> Vec<String> {
    forged.difference(real).map(|c| format!("{c:?}")).collect()
}

fn compare(version: Version, number: u16) {
    let Some(dir) = corpus_common::corpus_dir() else { return };
    let real_files = corpus_files(&dir, number);
    assert!(!real_files.is_empty(), "the corpus has no data file of version {number} to compare the forge with");
    let forged = forged(version);
    let forged_layouts = system_layouts(&forged);
    let forged_units = system_units(&forged);
    let forged_objects = system_objects(&forged);
    let forged_conventions = header_conventions(&forged, forged.file_headers()[0].size_pages as u32);
    assert!(forged_layouts.len() >= 9, "the forge writes at least the 9 base tables the reader needs");
    let mut forged_user = UserConventions::default();
    forged_user.add(&forged);
    let mut real_user = UserConventions::default();

    for path in &real_files {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let real = Database::open(&[path]).unwrap_or_else(|e| panic!("{name}: {e}"));

        // Boot page: the version fields the reader keys on.
        let (rb, fb) = (&real.catalog().boot, &forged.catalog().boot);
        assert_eq!((fb.version, fb.create_version), (rb.version, rb.create_version), "{name}: boot versions");
        assert_eq!(fb.first_sys_indexes.file, rb.first_sys_indexes.file, "{name}: first sysindexes page's file");

        // File header page: the fields the reader reads.
        let (rh, fh) = (&real.file_headers()[0], &forged.file_headers()[0]);
        assert_eq!((fh.file_id, fh.filegroup_id), (rh.file_id, rh.filegroup_id), "{name}: primary file ids");
        assert_eq!(fh.logical_name.is_some(), rh.logical_name.is_some(), "{name}: logical name present");

        // The fixed pages at the start of a primary file.
        for page in FIXED_PAGES {
            let fields = |h: Option<PageHeader>| h.map(|h| (h.page_type, h.header_version, h.slot_count));
            assert_eq!(
                fields(header(&forged, page)),
                fields(header(&real, page)),
                "{name}: page 1:{page} (type, header version, slot count)"
            );
        }

        // Page header conventions per page type, for the page types both files hold.
        let real_conventions = header_conventions(&real, real.file_headers()[0].size_pages as u32);
        for (page_type, forged_set) in &forged_conventions {
            let Some(real_set) = real_conventions.get(page_type) else { continue };
            for convention in forged_set {
                assert!(
                    real_set.contains(convention),
                    "{name}: forged {page_type} pages have (header version, checksum, level) \
                     {convention:?}; SQL Server's have {real_set:?}"
                );
            }
        }

        // System base tables: same allocation units, same physical layouts, same names and rows.
        let real_units = system_units(&real);
        for unit in &forged_units {
            assert!(real_units.contains(unit), "{name}: forged system allocation unit {unit:?} is not SQL Server's");
        }
        let real_layouts = system_layouts(&real);
        for (owner, columns) in &forged_layouts {
            let real_columns =
                real_layouts.get(owner).unwrap_or_else(|| panic!("{name}: no system rowset for {owner:?}"));
            assert_eq!(columns.len(), real_columns.len(), "{name}: column count of system rowset {owner:?}");
            for (f, r) in columns.iter().zip(real_columns) {
                assert_eq!(f, r, "{name}: sysrscols row of system rowset {owner:?}, column {}", r.rowset_column_id);
            }
        }
        let real_objects = system_objects(&real);
        for object in &forged_objects {
            assert!(real_objects.contains(object), "{name}: forged system object {object:?} is not SQL Server's");
        }
        for table in forged.catalog().base_table_names() {
            let f = forged.catalog().read_base_table(&table).unwrap_or_else(|e| panic!("forged {table}: {e}"));
            let r = real.catalog().read_base_table(&table).unwrap_or_else(|e| panic!("{name}: {table}: {e}"));
            assert_eq!(f.names, r.names, "{name}: columns of {table}");
        }
        real_user.add(&real);
        eprintln!(
            "forge {number} vs {name}: {} system rowsets, {} allocation units, {} system objects, {} page types agree",
            forged_layouts.len(),
            forged_units.len(),
            forged_objects.len(),
            forged_conventions.len()
        );
    }
    forged_user.assert_within(&real_user, number);
}

#[test]
fn forge_2016_agrees_with_sql_server_2016_files() {
    compare(Version::V852, 852);
}

#[test]
fn forge_2019_agrees_with_sql_server_2019_files() {
    compare(Version::V904, 904);
}
