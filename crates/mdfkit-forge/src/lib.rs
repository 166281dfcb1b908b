//! mdfkit-forge: writes valid SQL Server data files from a small declarative [`Spec`], in the
//! on-disk format of SQL Server 2016 (852) or 2019 (904), laid out the way SQL Server lays them
//! out. It is the fixture generator of mdfkit's tests, demo and benchmarks; the reader never uses
//! it.
//!
//! What a forged database holds, and which reader module documents each structure:
//!
//! | structure | written by | documented in (reader) |
//! |---|---|---|
//! | page header, slot array | [`page`] | `page/mod.rs` |
//! | page checksums (every page but the minimally logged maps, as SQL Server) | [`page::checksum`] | `page/protection.rs` |
//! | file header page (page 0 of each file) | `meta::file_header_page` | `page/file_header.rs` |
//! | boot page 1:9 | `meta::boot_page` | `page/boot.rs` |
//! | PFS (every 8,088 pages), GAM, SGAM, DCM, BCM (every 511,232) | `build` | `page/allocation.rs` |
//! | IAM pages and chains (one per file and GAM interval) | `build` | `page/allocation.rs` |
//! | FixedVar records, null bitmaps, forwarded records, stubs, ghosts | [`record`] | `record.rs`, `scan.rs` |
//! | heaps (IAM order), clustered indexes (leaf chain, index levels) | `build` | `scan.rs` |
//! | row-overflow pointers, in-row LOB roots, DATA and INTERNAL LOB records | `build` | `lob.rs` |
//! | system base tables (sysallocunits, sysrowsets, sysrscols, sysschobjs, syscolpars, sysidxstats, sysiscols, sysclsobjs, sysscalartypes, sysprufiles, ...) | [`systables`], `meta` | `catalog/base.rs`, `catalog/rowset.rs`, `catalog/model.rs` |
//! | value storage forms | [`value`] | `decode.rs` |
//! | ROW compressed leaf records (CD format: CD array, short data clusters, long data region, compressed value forms, SCSU; `TableSpec::compression`; the non-leaf index records above them too: the compressed key and the child page as a six-byte column) | [`cd`], `build` | `record/cd.rs`, `compressed/values.rs`, `compressed/scsu.rs`, `rows.rs`, `check.rs`, `anatomy.rs` |
//! | log records (begin, commit, insert / delete / modify row), log blocks, `.ldf` files (file header page, VLFs) | [`log`] | `log/record.rs`, `log/block.rs`, `log/ldf.rs`, `log/redo.rs` |
//! | full backups (with a SCIN record when given a header), log backups (MSTL / MQTL) | [`backup`] | `backup/mod.rs`, `backup/header.rs` |
//! | nonclustered indexes in the CD format (`TableSpec::indexes`, `IndexSpec`: ROW or PAGE, unique or not, included columns, the row locator (clustered key or heap RID); leaf records in key order, leaf pages linked, non-leaf levels; sysidxstats, sysiscols, sysrowsets, sysrscols, sysallocunits rows) | `build`, `meta` | `index_rows.rs`, `check.rs`, `anatomy.rs` |
//! | vardecimal storage format (`TableSpec::vardecimal`: decimals as variable-length columns; the table option's catalog flag is not written) | [`value::encode_vardecimal`], `build` | `compressed/vardecimal.rs`, `rows.rs` |
//!
//! Deterministic: the same spec gives the same bytes (values are a pure function of the seed,
//! table, column and row number; no clock, no randomness from the environment).
//!
//! ```
//! use mdfkit_forge::{ColType, ColumnSpec, Gen, Layout, Nulls, Spec, TableSpec, Version};
//! let spec = Spec::new("shop", Version::V904, 7).table(
//!     TableSpec::new("dbo", "Orders", Layout::Clustered { key: 0 }, 100)
//!         .column(ColumnSpec::new("OrderID", ColType::Int, Gen::Sequence { start: 1, step: 1 }, Nulls::Never))
//!         .column(ColumnSpec::new("Note", ColType::NVarChar(Some(40)), Gen::Random, Nulls::Every(7))),
//! );
//! let files = mdfkit_forge::forge(&spec).unwrap();
//! assert_eq!(files[0].name, "shop.mdf");
//! ```

mod alloc;
pub mod backup;
mod build;
pub mod cd;
pub mod log;
mod meta;
pub mod page;
pub mod record;
pub mod samples;
pub mod spec;
pub mod systables;
#[rustfmt::skip]
mod systables_data;
pub mod value;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

pub use spec::{ColType, ColumnSpec, Compression, Gen, IndexSpec, Layout, Nulls, Spec, SpecError, TableSpec, Version};
pub use value::Val;

use page::{PageId, PAGE_SIZE};

/// One forged data file.
#[derive(Debug, Clone)]
pub struct ForgedFile {
    pub file_id: u16,
    pub name: String,
    pub bytes: Vec<u8>,
}

struct MemorySink {
    files: BTreeMap<u16, Vec<u8>>,
}

impl build::Sink for MemorySink {
    fn put(&mut self, id: PageId, bytes: &[u8]) -> io::Result<()> {
        let f = self.files.entry(id.file).or_default();
        let at = id.page as usize * PAGE_SIZE;
        if f.len() < at + PAGE_SIZE {
            f.resize(at + PAGE_SIZE, 0);
        }
        f[at..at + PAGE_SIZE].copy_from_slice(bytes);
        Ok(())
    }

    fn set_pages(&mut self, file_id: u16, pages: u32) -> io::Result<()> {
        self.files.entry(file_id).or_default().resize(pages as usize * PAGE_SIZE, 0);
        Ok(())
    }
}

struct FileSink {
    files: BTreeMap<u16, std::fs::File>,
}

impl build::Sink for FileSink {
    fn put(&mut self, id: PageId, bytes: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let f = self.files.get(&id.file).ok_or_else(|| io::Error::other(format!("no file {}", id.file)))?;
        f.write_all_at(bytes, id.page as u64 * PAGE_SIZE as u64)
    }

    fn set_pages(&mut self, file_id: u16, pages: u32) -> io::Result<()> {
        let f = self.files.get(&file_id).ok_or_else(|| io::Error::other(format!("no file {file_id}")))?;
        f.set_len(pages as u64 * PAGE_SIZE as u64)
    }
}

fn run(spec: &Spec, sink: &mut dyn build::Sink) -> io::Result<()> {
    spec.validate().map_err(io::Error::other)?;
    let file_ids: Vec<u16> = meta::file_list(spec).iter().filter(|f| !f.log).map(|f| f.file_id).collect();
    let mut w = build::Writer { spec, space: alloc::Space::new(&file_ids), sink, blob_id: 0 };
    let mut tables = Vec::new();
    for (i, t) in spec.tables.iter().enumerate() {
        tables.push(build::write_table(&mut w, t, meta::TableIds::for_table(i))?);
    }
    build::write_catalog(&mut w, &tables)
}

/// Table `table`'s (index in the spec) rowset id (`sys.partitions.partition_id`) and in-row
/// allocation unit id, as its pages and catalog rows carry them.
pub fn table_units(table: usize) -> (u64, i64) {
    let ids = meta::TableIds::for_table(table);
    (ids.rowset as u64, ids.in_row_unit)
}

/// Forges the database in memory: its data files, primary first.
pub fn forge(spec: &Spec) -> io::Result<Vec<ForgedFile>> {
    let mut sink = MemorySink { files: BTreeMap::new() };
    run(spec, &mut sink)?;
    let names = meta::file_list(spec);
    Ok(sink
        .files
        .into_iter()
        .map(|(file_id, bytes)| ForgedFile {
            file_id,
            name: names.iter().find(|f| f.file_id == file_id).map(|f| f.file_name.clone()).unwrap_or_default(),
            bytes,
        })
        .collect())
}

/// Forges the database into `dir` (created if needed), writing pages straight to the files (no
/// copy of the database in memory: fit for multi-gigabyte databases). Returns the file paths,
/// primary first.
pub fn forge_to_dir(spec: &Spec, dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut files = BTreeMap::new();
    let mut paths = Vec::new();
    for f in meta::file_list(spec).into_iter().filter(|f| !f.log) {
        let path = dir.join(&f.file_name);
        let file = std::fs::OpenOptions::new().create(true).write(true).truncate(true).read(true).open(&path)?;
        files.insert(f.file_id, file);
        paths.push(path);
    }
    let mut sink = FileSink { files };
    run(spec, &mut sink)?;
    Ok(paths)
}

/// [`live_rows`] with each value spelled as SQL Server prints it (`NULL` for NULL): what readers'
/// tests compare the rows they read with.
pub fn live_rows_text(spec: &Spec, table: usize) -> impl Iterator<Item = Vec<String>> + '_ {
    let columns = &spec.tables[table].columns;
    live_rows(spec, table).map(move |row| {
        row.iter().zip(columns).map(|(v, c)| v.as_ref().map_or("NULL".to_string(), |v| v.sql_text(c.ty))).collect()
    })
}

/// The live rows of table `table` (index in the spec) in the order they were generated (for a
/// clustered table: key order), each value `None` for NULL. Ghost rows are left out.
pub fn live_rows(spec: &Spec, table: usize) -> impl Iterator<Item = Vec<Option<Val>>> + '_ {
    let t = &spec.tables[table];
    let seed = build::table_seed(spec, t);
    let added = t.added_after.map_or(usize::MAX, |(first, _)| first);
    (0..build::generated_rows(t)).filter(move |&r| !build::is_ghost(t, r)).map(move |row| {
        let old = build::predates_added_columns(t, row);
        t.columns
            .iter()
            .enumerate()
            .map(|(i, c)| if old && i >= added { c.default.clone() } else { value::generate(c, seed, i, row) })
            .collect()
    })
}
