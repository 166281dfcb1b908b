//! The catalog rows describing the database (system base tables), the boot page and the file
//! header pages.
//!
//! - Boot page: reader `page/boot.rs` (dbi_* offsets; record length 1620 bytes in 852 files and
//!   1768 in 904 files, as in the corpus).
//! - File header: reader `page/file_header.rs` (49 columns / 46 stored variable-length entries in
//!   852, 56 / 55 in 904; the entry sizes are those of the corpus files).
//! - Catalog rows: sysschobjs, syscolpars, sysrowsets, sysrscols, sysallocunits, sysidxstats,
//!   sysiscols, sysclsobjs (schemas), sysscalartypes, sysprufiles, sysseobjvalues (stored defaults
//!   of added columns: valclass 1, id = rowset, subid = hbcolid, valnum 0, value a sql_variant
//!   with version byte 1): reader `catalog/base.rs`,
//!   `catalog/rowset.rs`, `catalog/model.rs`; status values as seen in the corpus (sysrowsets,
//!   sysidxstats of heaps and primary keys, sysschobjs of user tables).

use crate::page::{self, PageBuf, PageId};
use crate::record::RecordLayout;
use crate::spec::{ColType, Layout, Spec, TableSpec, Version};
use crate::systables::{self as st, SVal, SysRow};
use crate::value;

/// Ids the forge gives one user table.
#[derive(Debug, Clone, Copy)]
pub struct TableIds {
    pub object_id: i32,
    pub pk_id: i32,
    pub rowset: i64,
    pub in_row_unit: i64,
    pub lob_unit: i64,
    pub overflow_unit: i64,
    /// The table's position in the spec.
    pub number: usize,
}

/// Ids the forge gives one nonclustered index.
#[derive(Debug, Clone, Copy)]
pub struct IndexIds {
    /// sysidxstats.indid: 2 for the table's first nonclustered index.
    pub index_id: i64,
    pub rowset: i64,
    pub in_row_unit: i64,
}

impl TableIds {
    /// The ids of the table's nonclustered index `index` (from 0).
    pub fn index(&self, index: usize) -> IndexIds {
        let base = (1i64 << 56) | ((200_000 + 512 * self.number as i64 + 2 * index as i64) << 16);
        IndexIds { index_id: 2 + index as i64, rowset: base, in_row_unit: base + (1 << 16) }
    }

    pub fn for_table(index: usize) -> Self {
        let k = index as i64;
        let object_id = 100_000_007 + 400_009 * index as i32;
        // Partition and allocation unit ids: 1 << 56 | counter << 16, as SQL Server hands them out.
        let base = (1i64 << 56) | ((1000 + 4 * k) << 16);
        TableIds {
            object_id,
            pk_id: object_id + 16,
            rowset: base,
            in_row_unit: base + (1 << 16),
            lob_unit: base + (2 << 16),
            overflow_unit: base + (3 << 16),
            number: index,
        }
    }
}

/// One allocation unit as sysallocunits describes it.
#[derive(Debug, Clone, Default)]
pub struct UnitMeta {
    pub auid: i64,
    pub kind: u8,
    pub first: PageId,
    pub root: PageId,
    pub first_iam: PageId,
    pub used: u64,
    pub data: u64,
    pub reserved: u64,
}

/// What was written for one user table.
#[derive(Debug, Clone)]
pub struct TableMeta {
    pub ids: TableIds,
    pub rows: u64,
    pub units: Vec<UnitMeta>,
    pub max_leaf: usize,
    pub min_leaf: usize,
    pub layout: RecordLayout,
    pub indexes: Vec<IndexMeta>,
}

/// What was written for one nonclustered index.
#[derive(Debug, Clone)]
pub struct IndexMeta {
    pub ids: IndexIds,
    pub rows: u64,
    pub unit: UnitMeta,
    pub max_leaf: usize,
    pub min_leaf: usize,
    /// Its records' columns, in order ([`crate::build::index_columns`]).
    pub columns: Vec<crate::build::IndexColumn>,
    /// How many of them are its key (the non-leaf records' columns).
    pub key_count: usize,
}

/// Where the system tables were put (empty in the sizing pass).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub system_units: Vec<(i32, UnitMeta)>,
    /// Final size of each data file, in pages.
    pub file_pages: Vec<(u16, u32)>,
}

/// Creation time of every object: 2024-01-02 03:04:05.000 (days since 1900, 1/300 s ticks).
const CREATED: SVal = SVal::DateTime(45_291, (3 * 3600 + 4 * 60 + 5) * 300);
const COLLATION: i64 = 872_468_488;
/// syscolpars.status of a sparse column; sysrscols.status of one.
const COLPARS_SPARSE: i64 = 0x100_0000;
const RSCOLS_SPARSE: i64 = 0x100;
/// sysseobjvalues.valclass of stored defaults.
const OUT_OF_ROW_DEFAULT: i64 = 1;

/// `value` as a sql_variant of the column's type: base type id, version 1, the type's
/// properties (length and collation for strings, length for binaries, precision and scale for
/// decimals, scale for times), then the value in its storage form.
fn variant(ty: ColType, value: &value::Val) -> Vec<u8> {
    let (length, prec, scale) = ty.length_prec_scale();
    let mut v = vec![ty.type_id(), 1];
    match ty {
        ColType::Char(_) | ColType::VarChar(_) | ColType::NChar(_) | ColType::NVarChar(_) => {
            v.extend_from_slice(&length.to_le_bytes());
            v.extend_from_slice(&(COLLATION as u32).to_le_bytes());
        }
        ColType::Binary(_) | ColType::VarBinary(_) => v.extend_from_slice(&length.to_le_bytes()),
        ColType::Decimal(..) | ColType::Numeric(..) => v.extend_from_slice(&[prec, scale]),
        ColType::Time(_) | ColType::DateTime2(_) | ColType::DateTimeOffset(_) => v.push(scale),
        _ => {}
    }
    match value {
        value::Val::Bit(b) => v.push(u8::from(*b)),
        other => other.encode(ty, &mut v),
    }
    v
}

fn int(v: impl Into<i64>) -> SVal {
    SVal::Int(v.into())
}

fn text(s: impl Into<String>) -> SVal {
    SVal::Text(s.into())
}

fn page_bytes(p: PageId) -> SVal {
    SVal::Bytes(p.bytes().to_vec())
}

fn datetime_text(s: &str) -> SVal {
    // "YYYY-MM-DD HH:MM:SS.mmm" → days since 1900 and ticks.
    let n = |a: usize, b: usize| s.get(a..b).and_then(|x| x.parse::<i64>().ok()).unwrap_or(0);
    let (y, m, d) = (n(0, 4), n(5, 7), n(8, 10));
    let days = days_from_civil(y, m, d) - days_from_civil(1900, 1, 1);
    let ms = ((n(11, 13) * 60 + n(14, 16)) * 60 + n(17, 19)) * 1000 + n(20, 23);
    SVal::DateTime(days as i32, (ms * 3 / 10) as u32)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe
}

/// Schema id of a schema name.
pub fn schema_id(spec: &Spec, name: &str) -> i64 {
    match name {
        "dbo" => 1,
        _ => 5 + spec.schemas.iter().position(|s| s == name).unwrap_or(0) as i64,
    }
}

/// sysrscols' maxinrowlen: 8000 for the `(max)` types (varbinary, varchar, nvarchar and xml with
/// length 0 in `ti`), 0 for every other column, sql_variant included — as in every corpus file.
fn max_inrow_length(ti: u32) -> i64 {
    const MAX_TYPES: [u32; 4] = [165, 167, 231, 241];
    if (ti >> 8) & 0xffff == 0 && MAX_TYPES.contains(&(ti & 0xff)) {
        8000
    } else {
        0
    }
}

#[allow(clippy::too_many_arguments)]
fn rscol(
    rowset: i64,
    colid: i32,
    ti: u32,
    cid: i64,
    ordkey: i16,
    not_null: bool,
    offset: u32,
    nullbit: u32,
    bitpos: i16,
) -> SysRow {
    vec![
        ("rsid", int(rowset)),
        ("rscolid", int(colid)),
        ("hbcolid", int(colid)),
        ("rcmodified", int(0)),
        ("ti", int(ti)),
        ("cid", int(cid)),
        ("ordkey", int(ordkey)),
        ("maxinrowlen", int(max_inrow_length(ti))),
        ("status", int(if not_null { 128 } else { 0 })),
        ("offset", int(offset)),
        ("nullbit", int(nullbit)),
        ("bitpos", int(bitpos)),
    ]
}

fn unit_row(u: &UnitMeta, owner: i64) -> SysRow {
    vec![
        ("auid", int(u.auid)),
        ("type", int(u.kind)),
        ("ownerid", int(owner)),
        ("status", int(0)),
        ("fgid", int(1)),
        ("pgfirst", page_bytes(u.first)),
        ("pgroot", page_bytes(u.root)),
        ("pgfirstiam", page_bytes(u.first_iam)),
        ("pcused", int(u.used as i64)),
        ("pcdata", int(u.data as i64)),
        ("pcreserved", int(u.reserved as i64)),
    ]
}

/// The rows of system table `id`.
pub fn system_rows(spec: &Spec, id: i32, tables: &[TableMeta], catalog: &Catalog) -> Vec<SysRow> {
    let mut rows = Vec::new();
    let users = spec.tables.iter().zip(tables);
    match id {
        st::SYSSCHOBJS => {
            for t in st::SYSTEM_TABLES {
                rows.push(vec![
                    ("id", int(t.id)),
                    ("name", text(t.name)),
                    ("nsid", int(4)),
                    ("nsclass", int(0)),
                    ("status", int(917_505)),
                    ("type", text("S ")),
                    ("pid", int(0)),
                    ("pclass", int(1)),
                    ("intprop", int(t.columns.len() as i64)),
                    ("created", datetime_text(t.created)),
                    ("modified", datetime_text(t.created)),
                    ("status2", int(0)),
                ]);
            }
            for (t, m) in users {
                let nsid = schema_id(spec, &t.schema);
                rows.push(vec![
                    ("id", int(m.ids.object_id)),
                    ("name", text(t.name.clone())),
                    ("nsid", int(nsid)),
                    ("nsclass", int(0)),
                    ("status", int(917_504)),
                    ("type", text("U ")),
                    ("pid", int(0)),
                    ("pclass", int(1)),
                    ("intprop", int(t.columns.len() as i64)),
                    ("created", CREATED),
                    ("modified", CREATED),
                    ("status2", int(0)),
                ]);
                if let Layout::Clustered { .. } = t.layout {
                    rows.push(vec![
                        ("id", int(m.ids.pk_id)),
                        ("name", text(pk_name(&t.name))),
                        ("nsid", int(nsid)),
                        ("nsclass", int(0)),
                        ("status", int(4)),
                        ("type", text("PK")),
                        ("pid", int(m.ids.object_id)),
                        ("pclass", int(1)),
                        ("intprop", int(0)),
                        ("created", CREATED),
                        ("modified", CREATED),
                        ("status2", int(0)),
                    ]);
                }
            }
        }
        st::SYSCOLPARS => {
            for t in st::SYSTEM_TABLES {
                for c in t.columns {
                    rows.push(vec![
                        ("id", int(t.id)),
                        ("number", int(0)),
                        ("colid", int(c.colid)),
                        ("name", text(c.name)),
                        ("xtype", int(c.xtype)),
                        ("utype", int(c.utype)),
                        ("length", int(c.length)),
                        ("prec", int(c.prec)),
                        ("scale", int(c.scale)),
                        ("collationid", int(c.collation)),
                        ("status", int(c.status)),
                        ("maxinrow", int(c.length)),
                        ("xmlns", int(0)),
                        ("dflt", int(0)),
                        ("chk", int(0)),
                    ]);
                }
            }
            for (t, m) in users {
                for (i, c) in t.columns.iter().enumerate() {
                    let (length, prec, scale) = c.ty.length_prec_scale();
                    let padded = c.ty.is_text() || matches!(c.ty, ColType::Binary(_) | ColType::VarBinary(_));
                    let status = i64::from(!c.nullable())
                        | if padded { 2 } else { 0 }
                        | if c.sparse { COLPARS_SPARSE } else { 0 };
                    rows.push(vec![
                        ("id", int(m.ids.object_id)),
                        ("number", int(0)),
                        ("colid", int(i as i64 + 1)),
                        ("name", text(c.name.clone())),
                        ("xtype", int(c.ty.type_id())),
                        ("utype", int(c.ty.type_id())),
                        ("length", int(length)),
                        ("prec", int(prec)),
                        ("scale", int(scale)),
                        ("collationid", int(if c.ty.is_text() { COLLATION } else { 0 })),
                        ("status", int(status)),
                        ("maxinrow", int(if length < 0 { 8000 } else { i64::from(length) })),
                        ("xmlns", int(0)),
                        ("dflt", int(0)),
                        ("chk", int(0)),
                    ]);
                }
            }
        }
        st::SYSROWSETS => {
            for t in st::SYSTEM_TABLES {
                let rcrows = system_row_count(spec, t.id, tables);
                rows.push(vec![
                    ("rowsetid", int(t.rowset)),
                    ("ownertype", int(1)),
                    ("idmajor", int(t.id)),
                    ("idminor", int(1)),
                    ("numpart", int(1)),
                    ("status", int(516)),
                    ("fgidfs", int(0)),
                    ("rcrows", int(rcrows as i64)),
                    ("cmprlevel", int(0)),
                    ("fillfact", int(0)),
                    ("maxnullbit", int(t.columns.len() as i64)),
                    ("maxleaf", int(0)),
                    ("maxint", int(0)),
                    ("minleaf", int(0)),
                    ("minint", int(0)),
                ]);
            }
            for (t, m) in users {
                let clustered = matches!(t.layout, Layout::Clustered { .. });
                rows.push(vec![
                    ("rowsetid", int(m.ids.rowset)),
                    ("ownertype", int(1)),
                    ("idmajor", int(m.ids.object_id)),
                    ("idminor", int(i64::from(clustered))),
                    ("numpart", int(1)),
                    ("status", int(if clustered { 262_726 } else { 1_074_037_250 })),
                    ("fgidfs", int(0)),
                    ("rcrows", int(m.rows as i64)),
                    ("cmprlevel", int(i64::from(t.compression.level()))),
                    ("fillfact", int(0)),
                    ("maxnullbit", int(t.columns.len() as i64)),
                    ("maxleaf", int(m.max_leaf as i64)),
                    ("maxint", int(0)),
                    ("minleaf", int(m.min_leaf as i64)),
                    ("minint", int(0)),
                ]);
                for (ix, im) in t.indexes.iter().zip(&m.indexes) {
                    rows.push(vec![
                        ("rowsetid", int(im.ids.rowset)),
                        ("ownertype", int(1)),
                        ("idmajor", int(m.ids.object_id)),
                        ("idminor", int(im.ids.index_id)),
                        ("numpart", int(1)),
                        // As pubs' titleind and auidind.
                        ("status", int(2)),
                        ("fgidfs", int(0)),
                        ("rcrows", int(im.rows as i64)),
                        ("cmprlevel", int(i64::from(ix.compression.level()))),
                        ("fillfact", int(0)),
                        ("maxnullbit", int(0)),
                        ("maxleaf", int(im.max_leaf as i64)),
                        ("maxint", int(0)),
                        ("minleaf", int(im.min_leaf as i64)),
                        ("minint", int(0)),
                    ]);
                }
            }
        }
        st::SYSRSCOLS => {
            for t in st::SYSTEM_TABLES {
                for c in t.columns {
                    let mut r = rscol(
                        t.rowset,
                        c.colid,
                        c.ti,
                        0,
                        c.ordkey,
                        c.rs_status & 128 != 0,
                        c.offset,
                        c.nullbit,
                        c.bitpos,
                    );
                    r.retain(|(n, _)| *n != "cid" && *n != "status");
                    r.push((
                        "cid",
                        int(if matches!(c.xtype, 175 | 231 | 239 | 167) { i64::from(c.collation) } else { 0 }),
                    ));
                    r.push(("status", int(c.rs_status)));
                    rows.push(r);
                }
            }
            for (t, m) in users {
                let key = match t.layout {
                    Layout::Clustered { key } => Some(key),
                    Layout::Heap => None,
                };
                for (i, (c, p)) in t.columns.iter().zip(&m.layout.cols).enumerate() {
                    let leaf = match (p.fixed, p.var_index) {
                        (Some((o, _)), _) => o as u16,
                        (_, Some(v)) => (-(v as i32) - 1) as i16 as u16,
                        _ => 0,
                    };
                    let is_key = key == Some(i);
                    let offset = u32::from(leaf) | if is_key { 1 << 16 } else { 0 };
                    let nullbit = p.null_bit as u32 | if is_key { 1 << 16 } else { 0 };
                    if c.sparse {
                        // No offset and no null bit of its own (sharepoint_config's dbo.SiteMap).
                        let mut r = rscol(m.ids.rowset, i as i32 + 1, c.ty.ti(), 0, 0, false, 0, 0, 0);
                        r.retain(|(n, _)| *n != "cid" && *n != "status");
                        r.push(("cid", int(if c.ty.is_text() { COLLATION } else { 0 })));
                        r.push(("status", int(RSCOLS_SPARSE)));
                        rows.push(r);
                        continue;
                    }
                    rows.push(rscol(
                        m.ids.rowset,
                        i as i32 + 1,
                        c.ty.ti(),
                        if c.ty.is_text() { COLLATION } else { 0 },
                        i16::from(is_key),
                        !c.nullable(),
                        offset,
                        nullbit,
                        p.bit.map_or(0, i16::from),
                    ));
                }
                for im in &m.indexes {
                    rows.extend(index_rscols(t, im));
                }
            }
        }
        st::SYSSEOBJVALUES => {
            for (t, m) in users {
                for (i, c) in t.columns.iter().enumerate() {
                    if let Some(default) = &c.default {
                        rows.push(vec![
                            ("valclass", int(OUT_OF_ROW_DEFAULT)),
                            ("id", int(m.ids.rowset)),
                            ("subid", int(i as i64 + 1)),
                            ("valnum", int(0)),
                            ("value", SVal::Bytes(variant(c.ty, default))),
                        ]);
                    }
                }
            }
        }
        st::SYSALLOCUNITS => {
            for t in st::SYSTEM_TABLES {
                let u = catalog
                    .system_units
                    .iter()
                    .find(|(id, _)| *id == t.id)
                    .map(|(_, u)| u.clone())
                    .unwrap_or(UnitMeta { auid: t.rowset, kind: 1, ..Default::default() });
                rows.push(unit_row(&u, t.rowset));
            }
            for m in tables {
                for u in &m.units {
                    rows.push(unit_row(u, m.ids.rowset));
                }
                for im in &m.indexes {
                    rows.push(unit_row(&im.unit, im.ids.rowset));
                }
            }
        }
        st::SYSIDXSTATS => {
            for t in st::SYSTEM_TABLES {
                rows.push(vec![
                    ("id", int(t.id)),
                    ("indid", int(1)),
                    ("name", text("clst")),
                    ("status", int(524_299)),
                    ("intprop", int(0)),
                    ("fillfact", int(0)),
                    ("type", int(1)),
                    ("tinyprop", int(0)),
                    ("dataspace", int(0)),
                    ("lobds", int(0)),
                    ("rowset", int(t.rowset)),
                ]);
            }
            for (t, m) in users {
                let clustered = matches!(t.layout, Layout::Clustered { .. });
                let index_id = i64::from(clustered);
                let status = if clustered { 524_331 } else { 1 };
                let mut r = idxstats_row(m.ids.object_id, index_id, index_id, status, m.ids.rowset);
                if clustered {
                    r.push(("name", text(pk_name(&t.name))));
                }
                rows.push(r);
                for (ix, im) in t.indexes.iter().zip(&m.indexes) {
                    // An index (0x1), unique (0x8) (pubs' titleind: 0x1), of type 2.
                    let status = 1 | if ix.unique { 8 } else { 0 };
                    let mut r = idxstats_row(m.ids.object_id, im.ids.index_id, 2, status, im.ids.rowset);
                    r.push(("name", text(ix.name.clone())));
                    rows.push(r);
                }
            }
        }
        st::SYSISCOLS => {
            for t in st::SYSTEM_TABLES {
                for c in t.columns.iter().filter(|c| c.ordkey > 0) {
                    rows.push(iscol(t.id, 1, c.ordkey, c.colid));
                }
            }
            for (t, m) in users {
                if let Layout::Clustered { key } = t.layout {
                    rows.push(iscol(m.ids.object_id, 1, 1, key as i32 + 1));
                }
                for (ix, im) in t.indexes.iter().zip(&m.indexes) {
                    // Key columns (status 3, key ordinal in tinyprop1), then included ones (0x12,
                    // ordinal 0), as pubs' titleind and syscommittab's si_xdes_id; the row locator
                    // has no row here.
                    for (n, &c) in ix.keys.iter().enumerate() {
                        rows.push(iscol(m.ids.object_id, im.ids.index_id, n as i16 + 1, c as i32 + 1));
                    }
                    for (n, &c) in ix.include.iter().enumerate() {
                        let mut r =
                            iscol(m.ids.object_id, im.ids.index_id, (ix.keys.len() + n) as i16 + 1, c as i32 + 1);
                        for (name, v) in r.iter_mut() {
                            match *name {
                                "status" => *v = int(0x12),
                                "tinyprop1" => *v = int(0),
                                _ => {}
                            }
                        }
                        rows.push(r);
                    }
                }
            }
        }
        st::SYSCLSOBJS => {
            let class = |class: i64, id: i64, name: &str, status: i64, ty: &str| {
                vec![
                    ("class", int(class)),
                    ("id", int(id)),
                    ("name", text(name)),
                    ("status", int(status)),
                    ("type", text(ty)),
                    ("intprop", int(0)),
                    ("created", CREATED),
                    ("modified", CREATED),
                ]
            };
            rows.push(class(5, 1, "PRIMARY", 1, "  "));
            rows.push(class(31, 1, "PRIMARY", 1, "FG"));
            for (id, name) in [(1, "dbo"), (2, "guest"), (3, "INFORMATION_SCHEMA"), (4, "sys")] {
                rows.push(class(50, id, name, 0, "  "));
            }
            for s in &spec.schemas {
                rows.push(class(50, schema_id(spec, s), s, 0, "  "));
            }
            for (id, name) in [
                (16384, "db_owner"),
                (16385, "db_accessadmin"),
                (16386, "db_securityadmin"),
                (16387, "db_ddladmin"),
                (16389, "db_backupoperator"),
                (16390, "db_datareader"),
                (16391, "db_datawriter"),
                (16392, "db_denydatareader"),
                (16393, "db_denydatawriter"),
            ] {
                rows.push(class(50, id, name, 0, "  "));
            }
        }
        st::SYSSCALARTYPES => {
            for &(id, name, xtype, length, prec, scale, collation, status) in st::SCALAR_TYPES {
                rows.push(vec![
                    ("id", int(id)),
                    ("schid", int(4)),
                    ("name", text(name)),
                    ("xtype", int(xtype)),
                    ("length", int(length)),
                    ("prec", int(prec)),
                    ("scale", int(scale)),
                    ("collationid", int(collation)),
                    ("status", int(status)),
                    ("created", CREATED),
                    ("modified", CREATED),
                    ("dflt", int(0)),
                    ("chk", int(0)),
                ]);
            }
        }
        st::SYSPRUFILES => {
            for f in file_list(spec) {
                rows.push(vec![
                    ("dbfragid", int(1)),
                    ("fileid", int(f.file_id)),
                    ("grpid", int(if f.log { 0 } else { 1 })),
                    ("status", int(512)),
                    ("filetype", int(i64::from(f.log))),
                    ("filestate", int(0)),
                    (
                        "size",
                        int(catalog.file_pages.iter().find(|p| p.0 == f.file_id).map_or(1024, |p| i64::from(p.1))),
                    ),
                    ("maxsize", int(-1)),
                    ("growth", int(8192)),
                    ("lname", text(f.logical.clone())),
                    ("pname", text(format!("D:\\mdfkit-forge\\{}", f.file_name))),
                    ("fileguid", SVal::Bytes(guid(spec, f.file_id as u64).to_vec())),
                    ("internalstatus", int(0)),
                    ("diffbasetime", SVal::DateTime(0, 0)),
                    ("forkvc", int(0)),
                ]);
            }
        }
        _ => {}
    }
    rows
}

/// A user table's sysidxstats row: its heap (index 0, type 0) or one of its indexes; no name.
fn idxstats_row(object: i32, index: i64, index_type: i64, status: i64, rowset: i64) -> SysRow {
    vec![
        ("id", int(object)),
        ("indid", int(index)),
        ("status", int(status)),
        ("intprop", int(0)),
        ("fillfact", int(0)),
        ("type", int(index_type)),
        ("tinyprop", int(0)),
        ("dataspace", int(0)),
        ("lobds", int(0)),
        ("rowset", int(rowset)),
    ]
}

fn iscol(object: i32, index: i64, subid: i16, colid: i32) -> SysRow {
    vec![
        ("idmajor", int(object)),
        ("idminor", int(index)),
        ("subid", int(subid)),
        ("status", int(3)),
        ("intprop", int(colid)),
        ("tinyprop1", int(subid)),
        ("tinyprop2", int(0)),
        ("tinyprop3", int(0)),
        ("tinyprop4", int(0)),
    ]
}

fn pk_name(table: &str) -> String {
    format!("PK_{table}")
}

/// Rows a system table holds (its sysrowsets.rcrows).
fn system_row_count(spec: &Spec, id: i32, tables: &[TableMeta]) -> usize {
    if id == st::SYSROWSETS {
        return st::SYSTEM_TABLES.len() + tables.iter().map(|t| 1 + t.indexes.len()).sum::<usize>();
    }
    system_rows(spec, id, tables, &Catalog::default()).len()
}

/// One file of the database.
#[derive(Debug, Clone)]
pub struct FileInfo {
    pub file_id: u16,
    pub logical: String,
    pub file_name: String,
    pub log: bool,
}

/// The database's files: data files (1, 3, 4, ...) and the log (2, not written).
pub fn file_list(spec: &Spec) -> Vec<FileInfo> {
    let mut files =
        vec![FileInfo { file_id: 1, logical: spec.name.clone(), file_name: format!("{}.mdf", spec.name), log: false }];
    files.push(FileInfo {
        file_id: 2,
        logical: format!("{}_log", spec.name),
        file_name: format!("{}_log.ldf", spec.name),
        log: true,
    });
    for k in 1..spec.data_files {
        files.push(FileInfo {
            file_id: k + 2,
            logical: format!("{}_{}", spec.name, k + 1),
            file_name: format!("{}_{}.ndf", spec.name, k + 1),
            log: false,
        });
    }
    files
}

/// A GUID derived from the seed (0 = the database's binding id).
pub fn guid(spec: &Spec, which: u64) -> [u8; 16] {
    let mut r = value::Rng::new(value::mix(&[spec.seed, 0x6775_6964, which]));
    let mut g = [0u8; 16];
    g[..8].copy_from_slice(&r.next_u64().to_le_bytes());
    g[8..].copy_from_slice(&r.next_u64().to_le_bytes());
    g
}

/// Sizes of the file header record's variable-length entries (zero-filled unless set below).
fn file_header_entries(version: Version) -> Vec<usize> {
    let mut v = vec![
        16, 0, 2, 2, 4, 4, 4, 4, 10, 10, 10, 0, 4, 4, 4, 4, 10, 28, 10, 10, 10, 16, 10, 16, 4, 10, 0, 0, 16, 0, 0, 0,
        0, 0, 0, 16, 0, 0, 10, 10, 28, 10, 16, 28, 8, 600,
    ];
    if version == Version::V904 {
        v.extend_from_slice(&[0, 0, 2, 10, 4, 4, 4, 8, 10]);
    }
    v
}

/// Page 0 of a data file.
pub fn file_header_page(spec: &Spec, file_id: u16, pages: u32) -> Box<[u8]> {
    let info = file_list(spec).into_iter().find(|f| f.file_id == file_id).expect("a data file");
    let sizes = file_header_entries(spec.version);
    let mut vars: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
    vars[0] = guid(spec, 0).to_vec();
    vars[2] = (file_id as i16).to_le_bytes().to_vec();
    vars[3] = 1i16.to_le_bytes().to_vec();
    vars[4] = (pages as i32).to_le_bytes().to_vec();
    vars[5] = (-1i32).to_le_bytes().to_vec();
    vars[6] = 8192i32.to_le_bytes().to_vec();
    vars[12] = (pages as i32).to_le_bytes().to_vec();
    vars[14] = (-1i32).to_le_bytes().to_vec();
    vars[15] = 4096i32.to_le_bytes().to_vec();
    vars[23] = guid(spec, u64::from(file_id)).to_vec();
    vars[27] = info.logical.encode_utf16().flat_map(u16::to_le_bytes).collect();
    if spec.version == Version::V904 {
        vars[48] = 1i16.to_le_bytes().to_vec();
    }
    let columns: u16 = match spec.version {
        Version::V852 => 49,
        Version::V904 => 56,
    };
    let mut r = vec![0x30, 0, 8, 0, 0, 0, 0, 0];
    r.extend_from_slice(&columns.to_le_bytes());
    r.extend(std::iter::repeat_n(0u8, usize::from(columns).div_ceil(8)));
    r.extend_from_slice(&(vars.len() as u16).to_le_bytes());
    let table = r.len();
    r.resize(table + 2 * vars.len(), 0);
    for (i, v) in vars.iter().enumerate() {
        r.extend_from_slice(v);
        let end = r.len() as u16;
        r[table + 2 * i..table + 2 * i + 2].copy_from_slice(&end.to_le_bytes());
    }
    let mut p = PageBuf::new(PageId::new(file_id, 0), page::TYPE_FILE_HEADER, page::ALLOCATION_PAGES_UNIT);
    p.add(&r);
    p.finish()
}

/// The boot page 1:9.
pub fn boot_page(spec: &Spec) -> Box<[u8]> {
    let len = match spec.version {
        Version::V852 => 1620,
        Version::V904 => 1768,
    };
    let mut r = vec![0u8; len];
    r[2..4].copy_from_slice(&(len as u16).to_le_bytes());
    let v = spec.version.dbi_version();
    r[4..6].copy_from_slice(&v.to_le_bytes());
    r[6..8].copy_from_slice(&v.to_le_bytes());
    // SIMPLE recovery (0x8), CHECKSUM page verify (0x10000).
    r[36..40].copy_from_slice(&0x4001_0009i32.to_le_bytes());
    let next_id = TableIds::for_table(spec.tables.len()).object_id;
    r[40..44].copy_from_slice(&next_id.to_le_bytes());
    if let SVal::DateTime(days, ticks) = CREATED {
        r[44..48].copy_from_slice(&ticks.to_le_bytes());
        r[48..52].copy_from_slice(&days.to_le_bytes());
    }
    let name: Vec<u8> = spec.name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let name = &name[..name.len().min(256)];
    r[52..52 + name.len()].copy_from_slice(name);
    for pad in (52 + name.len()..308).step_by(2) {
        r[pad..pad + 2].copy_from_slice(&0x2020u16.to_le_bytes());
    }
    r[308..312].copy_from_slice(&(name.len() as u32).to_le_bytes());
    r[312..314].copy_from_slice(&5i16.to_le_bytes());
    r[314..316].copy_from_slice(&spec.version.compatibility_level().to_le_bytes());
    r[392..396].copy_from_slice(&(COLLATION as u32).to_le_bytes());
    r[408..424].copy_from_slice(&guid(spec, 0x100));
    r[516..522].copy_from_slice(&crate::alloc::FIRST_SYS_INDEXES.bytes());
    let mut p = PageBuf::new(crate::alloc::BOOT_PAGE, page::TYPE_BOOT, page::ALLOCATION_PAGES_UNIT);
    p.add(&r);
    p.finish()
}

/// The sysrscols rows of a nonclustered index's rowset: its columns in record order (rscolid =
/// hbcolid), the key ones with their key ordinal, each numbered by a negative leaf offset as the
/// columns of a compressed rowset are (the key ones in non-leaf records too), no null bits (as
/// pubs' titleind and titleidind); the RID a NOT NULL binary(8).
fn index_rscols(t: &TableSpec, im: &IndexMeta) -> Vec<SysRow> {
    im.columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (ti, collation, not_null) = match c {
                crate::build::IndexColumn::Table(c) => {
                    let col = &t.columns[*c];
                    (col.ty.ti(), if col.ty.is_text() { COLLATION } else { 0 }, !col.nullable())
                }
                crate::build::IndexColumn::Rid => (ColType::Binary(8).ti(), 0, true),
            };
            let leaf = (-(i as i32) - 1) as i16 as u16 as u32;
            let is_key = i < im.key_count;
            let offset = leaf | if is_key { leaf << 16 } else { 0 };
            let ordkey = if is_key { i as i16 + 1 } else { 0 };
            rscol(im.ids.rowset, i as i32 + 1, ti, collation, ordkey, not_null, offset, 0, 0)
        })
        .collect()
}
