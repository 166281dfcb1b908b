//! Writing a database: user tables first (data, row-overflow and LOB pages), then the system base
//! tables that describe them, then IAM pages, the allocation maps, the boot page and the file
//! headers.

use std::collections::BTreeMap;
use std::io;

use crate::alloc::{self, Space, UnitPages, PFS_ALLOCATED, PFS_GHOST, PFS_IAM, PFS_MIXED};
use crate::cd::{self, CdCell};
use crate::meta::{self, Catalog, IndexMeta, TableMeta, UnitMeta};
use crate::page::{self, PageBuf, PageId, MAX_RECORD, PAGE_SIZE};
use crate::record::{forwarding_stub, Cell, Kind, RecordLayout};
use crate::spec::{ColType, Compression, IndexSpec, Layout, Spec, TableSpec};
use crate::systables::{self, SysRow, SysTable};
use crate::value::{self, Val};

/// Where pages go.
pub trait Sink {
    fn put(&mut self, id: PageId, bytes: &[u8]) -> io::Result<()>;
    /// The file's final size in pages (pages never put are zero).
    fn set_pages(&mut self, file_id: u16, pages: u32) -> io::Result<()>;
}

/// Rows of a user table as stored: what a reader must return is [`crate::live_rows`].
pub(crate) struct Writer<'a> {
    pub spec: &'a Spec,
    pub space: Space,
    pub sink: &'a mut dyn Sink,
    pub blob_id: u64,
}

/// Data pages under construction for one allocation unit of text (LOB or row-overflow) pages.
struct TextPages {
    unit: UnitPages,
    auid: i64,
    page: Option<PageBuf>,
}

const LOB_CHUNK: usize = 8040;
const INTERNAL_LINKS: usize = 500;
const INLINE_LINKS: usize = 5;

impl TextPages {
    fn new(auid: i64) -> Self {
        TextPages { unit: UnitPages::new(false), auid, page: None }
    }

    fn add(&mut self, w: &mut Writer, record: &[u8]) -> io::Result<(PageId, u16)> {
        if self.page.as_ref().is_some_and(|p| !p.fits(record.len())) {
            self.flush(w)?;
        }
        if self.page.is_none() {
            let id = self.unit.next_page(&mut w.space);
            self.page = Some(PageBuf::new(id, page::TYPE_TEXT_MIX, self.auid));
        }
        let p = self.page.as_mut().expect("an open page");
        let slot = p.add(record);
        Ok((p.id, slot))
    }

    fn flush(&mut self, w: &mut Writer) -> io::Result<()> {
        if let Some(p) = self.page.take() {
            let byte = PFS_ALLOCATED | fullness(p.used());
            let id = p.id;
            w.space.set_pfs(id, byte);
            w.sink.put(id, &p.finish())?;
        }
        Ok(())
    }
}

/// PFS fullness bits (heaps and text pages): 0 empty, 1 up to 50%, 2 up to 80%, 3 up to 95%, 4 full.
fn fullness(used: usize) -> u8 {
    let pct = used * 100 / (PAGE_SIZE - page::HEADER_SIZE);
    match pct {
        0 => 0,
        1..=50 => 1,
        51..=80 => 2,
        81..=95 => 3,
        _ => 4,
    }
}

fn blob_record(blob_id: u64, kind: u16, body: &[u8]) -> Vec<u8> {
    let len = 14 + body.len();
    let mut r = Vec::with_capacity(len);
    r.extend_from_slice(&[4 << 1, 0]);
    r.extend_from_slice(&(len as u16).to_le_bytes());
    r.extend_from_slice(&blob_id.to_le_bytes());
    r.extend_from_slice(&kind.to_le_bytes());
    r.extend_from_slice(body);
    r
}

fn link12(end: u32, at: (PageId, u16)) -> [u8; 12] {
    let mut l = [0u8; 12];
    l[..4].copy_from_slice(&end.to_le_bytes());
    l[4..10].copy_from_slice(&at.0.bytes());
    l[10..].copy_from_slice(&at.1.to_le_bytes());
    l
}

impl Writer<'_> {
    /// Stores `value` as a LOB tree; returns the in-row root (reader: `lob.rs`).
    fn write_lob(&mut self, text: &mut TextPages, value: &[u8]) -> io::Result<Vec<u8>> {
        self.blob_id += 1;
        let blob = self.blob_id;
        let mut data_links = Vec::new();
        for (i, chunk) in value.chunks(LOB_CHUNK).enumerate() {
            let at = text.add(self, &blob_record(blob, 3, chunk))?;
            data_links.push(((i * LOB_CHUNK + chunk.len()) as u64, at));
        }
        let mut root = vec![4, 0, 0, 0];
        root.extend_from_slice(&1u32.to_le_bytes());
        root.extend_from_slice(&(blob as u32).to_le_bytes());
        if data_links.len() <= INLINE_LINKS {
            for (end, at) in data_links {
                root.extend_from_slice(&link12(end as u32, at));
            }
            return Ok(root);
        }
        // Level 1: INTERNAL nodes of up to 500 links; each node's offsets count from its own start.
        root[1] = 1;
        let mut node_start = 0u64;
        for group in data_links.chunks(INTERNAL_LINKS) {
            let mut body = Vec::new();
            body.extend_from_slice(&(INTERNAL_LINKS as u16 + 1).to_le_bytes());
            body.extend_from_slice(&(group.len() as u16).to_le_bytes());
            body.extend_from_slice(&0u16.to_le_bytes());
            for (end, at) in group {
                body.extend_from_slice(&(end - node_start).to_le_bytes());
                body.extend_from_slice(&at.0.bytes());
                body.extend_from_slice(&at.1.to_le_bytes());
            }
            let at = text.add(self, &blob_record(blob, 2, &body))?;
            let node_end = group.last().map_or(node_start, |l| l.0);
            root.extend_from_slice(&link12(node_end as u32, at));
            node_start = node_end;
        }
        Ok(root)
    }

    /// Stores a row-overflow value; returns the 24-byte in-row pointer.
    fn write_overflow(&mut self, text: &mut TextPages, value: &[u8]) -> io::Result<Vec<u8>> {
        self.blob_id += 1;
        let blob = self.blob_id;
        let at = text.add(self, &blob_record(blob, 3, value))?;
        let mut p = vec![2, 0, 0, 0];
        p.extend_from_slice(&1u32.to_le_bytes());
        p.extend_from_slice(&(blob as u32).to_le_bytes());
        p.extend_from_slice(&link12(value.len() as u32, at));
        Ok(p)
    }
}

/// One row's stored cells before encoding.
enum Stored {
    Null,
    Bit(bool),
    Inline(Vec<u8>),
    Pointer(Vec<u8>),
}

impl Stored {
    fn cell(&self) -> Cell<'_> {
        match self {
            Stored::Null => Cell::Null,
            Stored::Bit(b) => Cell::Bit(*b),
            Stored::Inline(b) => Cell::Bytes(b),
            Stored::Pointer(b) => Cell::Complex(b),
        }
    }
}

/// The physical layout of a user table: columns in declaration order (sparse ones in the
/// sparse vector).
pub fn user_layout(t: &TableSpec) -> RecordLayout {
    layout_of(&t.columns, t)
}

/// The layout of `columns` of table `t`. With the vardecimal storage format, decimal and numeric
/// columns are variable-length. In a compressed table every column is numbered like a
/// variable-length one (leaf offset -n: the n-th entry of the CD array) and has no bit position.
fn layout_of(columns: &[crate::ColumnSpec], t: &TableSpec) -> RecordLayout {
    let compressed = t.compression != Compression::None;
    let cols: Vec<(Option<usize>, bool)> = columns
        .iter()
        .map(|c| {
            let fixed = if compressed || t.vardecimal && c.ty.is_decimal() { None } else { c.ty.fixed_len() };
            (fixed, c.ty == ColType::Bit && !compressed)
        })
        .collect();
    let sparse: Vec<bool> = columns.iter().map(|c| c.sparse).collect();
    RecordLayout::with_sparse(&cols, &sparse)
}

/// Whether generated row `row` was written before the table's added columns existed.
pub fn predates_added_columns(t: &TableSpec, row: u64) -> bool {
    t.added_after.is_some_and(|(_, rows)| row < rows)
}

/// Whether generated row `row` is a ghost.
pub fn is_ghost(t: &TableSpec, row: u64) -> bool {
    t.ghost_every.is_some_and(|g| g > 0 && row % g == g - 1)
}

/// Generated rows needed for `t.rows` live rows.
pub fn generated_rows(t: &TableSpec) -> u64 {
    match t.ghost_every {
        Some(g) if g > 1 => {
            // Every g-th generated row is a ghost: g - 1 live rows per g generated.
            let full = t.rows / (g - 1);
            let rest = t.rows % (g - 1);
            full * g + rest
        }
        _ => t.rows,
    }
}

pub fn table_seed(spec: &Spec, t: &TableSpec) -> u64 {
    let name = t.values_of.clone().unwrap_or_else(|| t.qualified_name());
    value::mix(&[spec.seed, value::name_hash(&name)])
}

/// Writes one user table's pages; returns what the catalog needs to describe it.
pub(crate) fn write_table(w: &mut Writer, t: &TableSpec, ids: meta::TableIds) -> io::Result<TableMeta> {
    let full_layout = user_layout(t);
    // Rows written before the added columns: the layout of the columns that existed then.
    let old_layout = t.added_after.map(|(first, _)| layout_of(&t.columns[..first], t));
    let compressed = t.compression != Compression::None;
    // A row's cells in a compressed table (its columns those of the row's layout).
    let cells_of = |layout: &RecordLayout, stored: &[Stored], values: &[Option<Val>]| -> Vec<CdCell> {
        stored
            .iter()
            .zip(values.iter().zip(&t.columns))
            .take(layout.cols.len())
            .map(|(s, (v, c))| match (s, v) {
                (Stored::Null, _) | (_, None) => CdCell::Null,
                (Stored::Pointer(b), _) => CdCell::Complex(b.clone()),
                (_, Some(v)) => cd::compress(v, c.ty).unwrap_or(CdCell::Null),
            })
            .collect()
    };
    // A row's record: CD format in a compressed table (as a ROW compressed page stores it).
    let encode = |layout: &RecordLayout, stored: &[Stored], values: &[Option<Val>], kind: Kind, out: &mut Vec<u8>| {
        if compressed {
            cd::encode(&cells_of(layout, stored, values), kind, out);
        } else {
            let cells: Vec<Cell> = stored.iter().map(Stored::cell).collect();
            layout.encode(&cells, kind, out);
        }
    };
    let seed = table_seed(w.spec, t);
    let has_lob = t.columns.iter().any(|c| c.ty.is_max());
    let mut in_row = UnitPages::new(false);
    let mut lob = TextPages::new(ids.lob_unit);
    let mut overflow = TextPages::new(ids.overflow_unit);
    let clustered = matches!(t.layout, Layout::Clustered { .. });
    let key = match t.layout {
        Layout::Clustered { key } => Some(key),
        Layout::Heap => None,
    };
    let mut page: Option<PageBuf> = None;
    let mut fwd: Option<PageBuf> = None;
    let mut first_page = PageId::NULL;
    // The first key of each leaf page: its stored bytes, or its compressed form (a CD cell).
    let mut index_entries: Vec<(CdCell, PageId)> = Vec::new();
    let mut live = 0u64;
    let (mut max_leaf, mut min_leaf) = (0usize, usize::MAX);
    let mut record = Vec::new();
    let mut values: Vec<Option<Val>> = Vec::with_capacity(t.columns.len());
    let mut stored: Vec<Stored> = Vec::with_capacity(t.columns.len());
    let mut data_pages = 0u64;
    // Each live row's values and RID (its record's place, or its forwarding stub's), for the
    // nonclustered indexes.
    let mut indexed: Vec<(Vec<Option<Val>>, PageId, u16)> = Vec::new();
    // Data pages opened so far (PAGE compression's CI structures go on every n-th).
    let mut opened = 0u64;
    let total = generated_rows(t);
    for row in 0..total {
        let ghost = is_ghost(t, row);
        let layout = match &old_layout {
            Some(old) if predates_added_columns(t, row) => old,
            _ => &full_layout,
        };
        values.clear();
        values.extend(t.columns.iter().enumerate().map(|(i, c)| value::generate(c, seed, i, row)));
        let forwarded = !ghost && !clustered && t.forward_every.is_some_and(|f| f > 0 && live % f == f - 1);
        stored.clear();
        for (c, v) in t.columns.iter().zip(&values) {
            stored.push(match v {
                None => Stored::Null,
                Some(Val::Bit(b)) => Stored::Bit(*b),
                Some(Val::Scaled(v)) if t.vardecimal && c.ty.is_decimal() => {
                    let mut b = Vec::new();
                    value::encode_vardecimal(*v, c.ty.scale(), &mut b);
                    Stored::Inline(b)
                }
                Some(v) => {
                    let mut b = Vec::new();
                    v.encode(c.ty, &mut b);
                    Stored::Inline(b)
                }
            });
        }
        if let (Some((first, _)), true) = (t.added_after, predates_added_columns(t, row)) {
            stored[first..].iter_mut().for_each(|s| *s = Stored::Null);
        }
        // Off-row: (max) values over 8000 bytes always; then the largest variable-length
        // values until the record fits.
        let limit = MAX_RECORD - if forwarded { 10 } else { 0 };
        for (c, s) in t.columns.iter().zip(stored.iter_mut()) {
            if let Stored::Inline(b) = s {
                if c.ty.is_max() && b.len() > 8000 {
                    *s = Stored::Pointer(w.write_lob(&mut lob, b)?);
                }
            }
        }
        let kind_for_size = if forwarded { Kind::Forwarded { stub: PageId::NULL, slot: 0 } } else { Kind::Primary };
        loop {
            encode(layout, &stored, &values, kind_for_size, &mut record);
            if record.len() <= limit {
                break;
            }
            let candidate = t
                .columns
                .iter()
                .zip(stored.iter())
                .enumerate()
                .filter(|(_, (c, s))| {
                    c.ty.fixed_len().is_none() && !c.sparse && matches!(s, Stored::Inline(b) if b.len() > 24)
                })
                .max_by_key(|(_, (_, s))| match s {
                    Stored::Inline(b) => b.len(),
                    _ => 0,
                })
                .map(|(i, _)| i);
            let Some(i) = candidate else {
                return Err(io::Error::other(format!("{}: a row does not fit in a page", t.qualified_name())));
            };
            let Stored::Inline(b) = std::mem::replace(&mut stored[i], Stored::Null) else { unreachable!() };
            stored[i] = Stored::Pointer(if t.columns[i].ty.is_max() {
                w.write_lob(&mut lob, &b)?
            } else {
                w.write_overflow(&mut overflow, &b)?
            });
        }
        let kind = if ghost { Kind::Ghost } else { Kind::Primary };
        if forwarded {
            // The stub stays here; the record goes to the current forwarding page.
            encode(layout, &stored, &values, kind_for_size, &mut record);
            let size = record.len();
            if fwd.as_ref().is_some_and(|p| !p.fits(size)) {
                flush_data(w, fwd.take(), false, &mut data_pages)?;
            }
            if fwd.is_none() {
                let id = in_row.next_page(&mut w.space);
                fwd = Some(data_page(t, id, ids.in_row_unit, layout.fixed_end, &mut opened));
            }
            if page.as_ref().is_some_and(|p| !p.fits(9)) {
                flush_data(w, page.take(), true, &mut data_pages)?;
            }
            if page.is_none() {
                let id = in_row.next_page(&mut w.space);
                page = Some(data_page(t, id, ids.in_row_unit, layout.fixed_end, &mut opened));
            }
            let here = page.as_mut().expect("open page");
            let f = fwd.as_mut().expect("open forwarding page");
            for p in [&mut *here, &mut *f] {
                if p.wants_ci && p.slot_count() == 0 {
                    p.set_compression_info(&cd::compression_info(t.columns.len()));
                }
                p.wants_ci = false;
            }
            encode(layout, &stored, &values, Kind::Forwarded { stub: here.id, slot: here.slot_count() }, &mut record);
            let fslot = f.add(&record);
            let slot =
                here.add(&if compressed { cd::forwarding_stub(f.id, fslot) } else { forwarding_stub(f.id, fslot) });
            if !t.indexes.is_empty() {
                indexed.push((values.clone(), here.id, slot));
            }
        } else {
            encode(layout, &stored, &values, kind, &mut record);
            // On a page with a CI structure the record is stored against it, and that is what must
            // fit: a value takes a prefix length byte more, which can move it to the long data
            // region (an end offset more, and the region's header). A page that wants one holds no
            // row yet: the first row makes it, one byte a column more at most.
            let room = |p: &PageBuf| match &p.ci {
                Some(ci) => {
                    let mut against = Vec::new();
                    cd::encode(&ci.apply(&cells_of(layout, &stored, &values)), kind, &mut against);
                    against.len()
                }
                None => record.len() + if p.wants_ci { layout.cols.len() } else { 0 },
            };
            if page.as_ref().is_some_and(|p| !p.fits(room(p))) {
                let mut done = page.take().expect("open page");
                let next = in_row.next_page(&mut w.space);
                if clustered {
                    done.next = next;
                }
                let prev = done.id;
                flush_data(w, Some(done), !clustered, &mut data_pages)?;
                let mut p = data_page(t, next, ids.in_row_unit, layout.fixed_end, &mut opened);
                if clustered {
                    p.prev = prev;
                }
                page = Some(p);
            }
            if page.is_none() {
                let id = in_row.next_page(&mut w.space);
                page = Some(data_page(t, id, ids.in_row_unit, layout.fixed_end, &mut opened));
            }
            let p = page.as_mut().expect("open page");
            if first_page.is_null() {
                first_page = p.id;
            }
            if p.wants_ci && p.slot_count() == 0 {
                // The first row makes the page's anchor and dictionary, if both fit with it.
                let ci = cd::PageCi::for_first_row(&cells_of(layout, &stored, &values));
                let (bytes, mut first) = (ci.bytes(), Vec::new());
                cd::encode(&ci.apply(&cells_of(layout, &stored, &values)), kind, &mut first);
                if p.fits(bytes.len() + first.len() + layout.cols.len()) {
                    p.set_compression_info(&bytes);
                    p.ci = Some(ci);
                }
            }
            p.wants_ci = false;
            if let Some(ci) = &p.ci {
                cd::encode(&ci.apply(&cells_of(layout, &stored, &values)), kind, &mut record);
            }
            if let Some(k) = key {
                if p.slot_count() == 0 {
                    match (&stored[k], &values[k]) {
                        (Stored::Inline(_), Some(v)) if compressed => {
                            index_entries.push((cd::compress(v, t.columns[k].ty).unwrap_or(CdCell::Null), p.id))
                        }
                        (Stored::Inline(b), _) => index_entries.push((CdCell::Bytes(b.clone()), p.id)),
                        _ => {}
                    }
                }
            }
            let slot = p.add(&record);
            if ghost {
                p.ghosts += 1;
            } else if !t.indexes.is_empty() {
                indexed.push((values.clone(), p.id, slot));
            }
        }
        if !ghost {
            live += 1;
        }
        max_leaf = max_leaf.max(record.len());
        min_leaf = min_leaf.min(record.len());
    }
    if first_page.is_null() {
        first_page = page.as_ref().map_or(PageId::NULL, |p| p.id);
    }
    flush_data(w, page.take(), !clustered, &mut data_pages)?;
    flush_data(w, fwd.take(), true, &mut data_pages)?;
    lob.flush(w)?;
    overflow.flush(w)?;
    let mut root = first_page;
    let mut index_pages = 0;
    if clustered && index_entries.len() > 1 {
        let entries = index_entries.into_iter().map(|(key, page)| (vec![key], page)).collect();
        let (r, n) = write_index_levels(w, &mut in_row, ids.in_row_unit, entries, compressed, None)?;
        root = r;
        index_pages = n;
    }
    let mut indexes = Vec::new();
    for (i, ix) in t.indexes.iter().enumerate() {
        indexes.push(write_nonclustered(w, t, ix, ids.index(i), &mut indexed)?);
    }
    let mut units = vec![finish_unit(w, in_row, ids.in_row_unit, 1, first_page, root, data_pages + index_pages)?];
    if has_lob || !lob.unit.extents.is_empty() {
        let used = lob.unit.pages;
        units.push(finish_unit(w, lob.unit, ids.lob_unit, 2, PageId::NULL, PageId::NULL, used)?);
    }
    if !overflow.unit.extents.is_empty() {
        let used = overflow.unit.pages;
        units.push(finish_unit(w, overflow.unit, ids.overflow_unit, 3, PageId::NULL, PageId::NULL, used)?);
    }
    Ok(TableMeta {
        ids,
        rows: live,
        units,
        max_leaf,
        min_leaf: if min_leaf == usize::MAX { 0 } else { min_leaf },
        layout: full_layout,
        indexes,
    })
}

/// One column of a nonclustered index's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexColumn {
    /// A column of the table (its index in the table's columns).
    Table(usize),
    /// The heap RID of the row (page 4, file 2, slot 2 bytes), a binary(8) column.
    Rid,
}

/// The columns of a nonclustered index's leaf records, in order, and how many of them are its
/// key at every level (the non-leaf records hold those): the key columns; then for a unique index
/// the included columns and the row locator (the clustered key columns the key lacks, or the
/// RID); for a non-unique one the row locator, part of its key, then the included columns. As
/// SQL Server's own files lay them out: pubs' `roysched.titleidind` (non-unique on a heap: the
/// key, then the RID as a binary(8) key column), `titles.titleind` (non-unique: the key, then the
/// clustered key as a key column), `sys.syscommittab.si_xdes_id` in every corpus file (unique:
/// the key, the included `dbfragid`, then the clustered key's other column).
pub fn index_columns(t: &TableSpec, ix: &IndexSpec) -> (Vec<IndexColumn>, usize) {
    let mut columns: Vec<IndexColumn> = ix.keys.iter().map(|&c| IndexColumn::Table(c)).collect();
    let locator: Vec<IndexColumn> = match t.layout {
        Layout::Heap => vec![IndexColumn::Rid],
        Layout::Clustered { key } if ix.keys.contains(&key) => Vec::new(),
        Layout::Clustered { key } => vec![IndexColumn::Table(key)],
    };
    let included = ix.include.iter().map(|&c| IndexColumn::Table(c));
    if ix.unique {
        columns.extend(included);
        columns.extend(locator);
        (columns, ix.keys.len())
    } else {
        columns.extend(locator);
        let keys = columns.len();
        columns.extend(included);
        (columns, keys)
    }
}

/// An integer key value in sort order: NULL first.
fn sort_key(v: &Option<Val>) -> Option<i64> {
    match v {
        Some(Val::Int(i)) => Some(*i),
        _ => None,
    }
}

/// Writes nonclustered index `ix` of `t` over its live rows (`rows`: values, RID; sorted here):
/// one CD index record a row at the leaf, in key order, leaf pages linked both ways, then the
/// non-leaf levels ([`write_index_levels`]) over each leaf page's first key.
fn write_nonclustered(
    w: &mut Writer,
    t: &TableSpec,
    ix: &IndexSpec,
    ids: meta::IndexIds,
    rows: &mut [(Vec<Option<Val>>, PageId, u16)],
) -> io::Result<IndexMeta> {
    let (columns, key_count) = index_columns(t, ix);
    let order = |(values, page, slot): &(Vec<Option<Val>>, PageId, u16)| -> (Vec<Option<i64>>, Option<i64>, u64) {
        let keys = ix.keys.iter().map(|&c| sort_key(&values[c])).collect();
        let clustered = match t.layout {
            Layout::Clustered { key } => sort_key(&values[key]),
            Layout::Heap => None,
        };
        (keys, clustered, u64::from(page.file) << 48 | u64::from(page.page) << 16 | u64::from(*slot))
    };
    rows.sort_by_cached_key(order);
    if ix.unique {
        if let Some(pair) = rows.windows(2).find(|p| order(&p[0]).0 == order(&p[1]).0) {
            return Err(io::Error::other(format!(
                "{} index {}: duplicate key {:?} in a unique index",
                t.qualified_name(),
                ix.name,
                order(&pair[0]).0
            )));
        }
    }
    let cells_of = |(values, page, slot): &(Vec<Option<Val>>, PageId, u16)| -> Vec<CdCell> {
        columns
            .iter()
            .map(|c| match c {
                IndexColumn::Table(i) => match &values[*i] {
                    Some(v) => cd::compress(v, t.columns[*i].ty).unwrap_or(CdCell::Null),
                    None => CdCell::Null,
                },
                IndexColumn::Rid => {
                    let mut rid = page.bytes().to_vec();
                    rid.extend_from_slice(&slot.to_le_bytes());
                    cd::compress(&Val::Bytes(rid), ColType::Binary(8)).unwrap_or(CdCell::Null)
                }
            })
            .collect()
    };
    let mut unit = UnitPages::new(false);
    let per_page = ix.rows_per_page.map_or(usize::MAX, usize::from);
    let (mut first, mut page, mut pages) = (PageId::NULL, None::<PageBuf>, 0u64);
    let mut entries: Vec<(Vec<CdCell>, PageId)> = Vec::new();
    let (mut max_leaf, mut min_leaf) = (0usize, usize::MAX);
    for row in rows.iter() {
        let cells = cells_of(row);
        let record = cd::index_record(&cells, None);
        if page.as_ref().is_some_and(|p| !p.fits(record.len()) || usize::from(p.slot_count()) >= per_page) {
            chain_index_page(w, &mut unit, &mut page, ids.in_row_unit, 0)?;
            pages += 1;
        }
        let p =
            page.get_or_insert_with(|| PageBuf::new(unit.next_page(&mut w.space), page::TYPE_INDEX, ids.in_row_unit));
        if first.is_null() {
            first = p.id;
        }
        if p.slot_count() == 0 {
            entries.push((cells[..key_count].to_vec(), p.id));
        }
        p.pminlen = p.pminlen.max(record.len() as u16);
        p.add(&record);
        max_leaf = max_leaf.max(record.len());
        min_leaf = min_leaf.min(record.len());
    }
    if let Some(p) = page.take() {
        flush_index(w, p)?;
        pages += 1;
    }
    let mut root = first;
    if entries.len() > 1 {
        let (r, n) = write_index_levels(w, &mut unit, ids.in_row_unit, entries, true, ix.rows_per_page)?;
        root = r;
        pages += n;
    }
    Ok(IndexMeta {
        ids,
        rows: rows.len() as u64,
        unit: finish_unit(w, unit, ids.in_row_unit, 1, first, root, pages)?,
        max_leaf,
        min_leaf: if min_leaf == usize::MAX { 0 } else { min_leaf },
        columns,
        key_count,
    })
}

/// A new data page of `t`'s in-row unit; with PAGE compression every `page_ci_every`-th one starts
/// with a CI structure.
fn data_page(t: &TableSpec, id: PageId, unit: i64, pminlen: usize, opened: &mut u64) -> PageBuf {
    let mut p = PageBuf::new(id, page::TYPE_DATA, unit);
    p.pminlen = pminlen as u16;
    *opened += 1;
    if t.compression == Compression::Page && t.page_ci_every.is_some_and(|n| n > 0 && opened.is_multiple_of(n)) {
        p.wants_ci = true;
    }
    p
}

fn flush_data(w: &mut Writer, page: Option<PageBuf>, heap: bool, pages: &mut u64) -> io::Result<()> {
    if let Some(p) = page {
        let mut byte = PFS_ALLOCATED;
        if heap {
            byte |= fullness(p.used());
        }
        if p.ghosts > 0 {
            byte |= PFS_GHOST;
        }
        let mixed = w.space.pfs(p.id) & PFS_MIXED;
        w.space.set_pfs(p.id, byte | mixed);
        let id = p.id;
        w.sink.put(id, &p.finish())?;
        *pages += 1;
    }
    Ok(())
}

/// Builds the non-leaf levels of an index from (first key, page) of each page below: index
/// records are status 0x06, the key columns, the child page (6 bytes); in a compressed index CD
/// records of the compressed key columns and the child page ([`cd::index_record`]). At most
/// `per_page` records a page. Returns the root and the pages written.
fn write_index_levels(
    w: &mut Writer,
    unit: &mut UnitPages,
    auid: i64,
    mut entries: Vec<(Vec<CdCell>, PageId)>,
    compressed: bool,
    per_page: Option<u16>,
) -> io::Result<(PageId, u64)> {
    let per_page = per_page.map_or(usize::MAX, usize::from);
    let mut level = 1u8;
    let mut written = 0;
    loop {
        let mut next_entries = Vec::new();
        let mut page: Option<PageBuf> = None;
        for (key, child) in &entries {
            let rec = if compressed {
                cd::index_record(key, Some(*child))
            } else {
                let mut rec = vec![3 << 1];
                for cell in key {
                    let CdCell::Bytes(bytes) = cell else { unreachable!("an uncompressed key is its stored bytes") };
                    rec.extend_from_slice(bytes);
                }
                rec.extend_from_slice(&child.bytes());
                rec
            };
            if page.as_ref().is_some_and(|p| !p.fits(rec.len()) || usize::from(p.slot_count()) >= per_page) {
                chain_index_page(w, unit, &mut page, auid, level)?;
                written += 1;
                page.as_mut().expect("the next page").pminlen = rec.len() as u16;
            }
            if page.is_none() {
                let mut p = PageBuf::new(unit.next_page(&mut w.space), page::TYPE_INDEX, auid);
                p.level = level;
                p.pminlen = rec.len() as u16;
                page = Some(p);
            }
            let p = page.as_mut().expect("open page");
            if p.slot_count() == 0 {
                next_entries.push((key.clone(), p.id));
            }
            p.add(&rec);
        }
        let last = page.take().expect("an index page");
        let last_id = last.id;
        flush_index(w, last)?;
        written += 1;
        if next_entries.len() <= 1 {
            return Ok((last_id, written));
        }
        entries = next_entries;
        level += 1;
    }
}

/// Writes the open index page `page`, linked to the next page of its unit, and opens that page at
/// `level`, linked back.
fn chain_index_page(
    w: &mut Writer,
    unit: &mut UnitPages,
    page: &mut Option<PageBuf>,
    auid: i64,
    level: u8,
) -> io::Result<()> {
    let mut done = page.take().expect("open page");
    let next = unit.next_page(&mut w.space);
    done.next = next;
    let prev = done.id;
    flush_index(w, done)?;
    let mut p = PageBuf::new(next, page::TYPE_INDEX, auid);
    p.prev = prev;
    p.level = level;
    *page = Some(p);
    Ok(())
}

fn flush_index(w: &mut Writer, p: PageBuf) -> io::Result<()> {
    let mixed = w.space.pfs(p.id) & PFS_MIXED;
    w.space.set_pfs(p.id, PFS_ALLOCATED | mixed);
    let id = p.id;
    w.sink.put(id, &p.finish())
}

/// Writes a unit's IAM pages (one per file and GAM interval it has pages in, chained) and
/// returns its sysallocunits description.
fn finish_unit(
    w: &mut Writer,
    mut unit: UnitPages,
    auid: i64,
    kind: u8,
    first: PageId,
    root: PageId,
    used: u64,
) -> io::Result<UnitMeta> {
    let mut groups: BTreeMap<(u16, u32), Vec<PageId>> = BTreeMap::new();
    for e in &unit.extents {
        groups.entry((e.file, e.page / alloc::GAM_INTERVAL)).or_default().push(*e);
    }
    if !unit.singles.is_empty() {
        groups.entry((1, 0)).or_default();
    }
    let keys: Vec<(u16, u32)> = groups.keys().copied().collect();
    let ids: Vec<PageId> = keys.iter().map(|&(file, _)| PageId::new(file, w.space.file(file).mixed_page())).collect();
    for (i, (key, id)) in keys.iter().zip(&ids).enumerate() {
        let mut p = PageBuf::new(*id, page::TYPE_IAM, auid);
        p.pminlen = 90;
        if i > 0 {
            p.prev = ids[i - 1];
        }
        if let Some(n) = ids.get(i + 1) {
            p.next = *n;
        }
        let mut header = vec![0u8; 94];
        header[2..4].copy_from_slice(&94u16.to_le_bytes());
        header[4..8].copy_from_slice(&(i as u32).to_le_bytes());
        let start = PageId::new(key.0, key.1 * alloc::GAM_INTERVAL);
        header[40..46].copy_from_slice(&start.bytes());
        if i == 0 {
            for (s, single) in unit.singles.iter().enumerate() {
                header[46 + 6 * s..52 + 6 * s].copy_from_slice(&single.bytes());
            }
        }
        p.add(&header);
        let mut bitmap = vec![0u8; 7992];
        bitmap[2..4].copy_from_slice(&7992u16.to_le_bytes());
        for e in &groups[key] {
            let extent = ((e.page - start.page) / 8) as usize;
            bitmap[4 + extent / 8] |= 1 << (extent % 8);
        }
        p.add(&bitmap);
        w.space.set_pfs(*id, PFS_ALLOCATED | PFS_MIXED | PFS_IAM);
        w.sink.put(*id, &p.finish())?;
    }
    unit.iam_pages = ids.clone();
    let reserved = unit.reserved();
    Ok(UnitMeta {
        auid,
        kind,
        first,
        root,
        first_iam: ids.first().copied().unwrap_or(PageId::NULL),
        used: used + ids.len() as u64,
        data: used,
        reserved,
    })
}

/// Writes a system base table (a clustered index) on pages given in advance; returns the pages
/// it needs when `pages` is `None` (a dry run).
pub(crate) fn write_system_table(
    w: &mut Writer,
    table: &SysTable,
    rows: &[SysRow],
    pages: Option<&[PageId]>,
) -> io::Result<(u64, u64)> {
    let layout = systables::layout(table);
    let mut encoded: Vec<(Vec<i64>, Vec<u8>, Vec<u8>)> = rows
        .iter()
        .map(|r| {
            let stored = systables::stored(table, r);
            let cells = systables::cells(table, &stored);
            let mut rec = Vec::new();
            layout.encode(&cells, Kind::Primary, &mut rec);
            let (key_bytes, key_ints) = systables::key(table, &stored);
            (key_ints, key_bytes, rec)
        })
        .collect();
    encoded.sort_by(|a, b| a.0.cmp(&b.0));
    // Leaves.
    let mut leaves: Vec<Vec<usize>> = vec![Vec::new()];
    let mut free = PAGE_SIZE - page::HEADER_SIZE;
    for (i, (_, _, rec)) in encoded.iter().enumerate() {
        if free < rec.len() + 2 {
            leaves.push(Vec::new());
            free = PAGE_SIZE - page::HEADER_SIZE;
        }
        free -= rec.len() + 2;
        leaves.last_mut().expect("a leaf").push(i);
    }
    // Index levels: count pages per level.
    let key_len = encoded.first().map_or(0, |e| e.1.len());
    let index_rec = 1 + key_len + 6;
    let per_page = (PAGE_SIZE - page::HEADER_SIZE) / (index_rec + 2);
    let mut level_sizes = Vec::new();
    let mut n = leaves.len();
    while n > 1 {
        n = n.div_ceil(per_page);
        level_sizes.push(n);
    }
    let total = leaves.len() + level_sizes.iter().sum::<usize>();
    let Some(pages) = pages else { return Ok((leaves.len() as u64, total as u64)) };
    assert_eq!(pages.len(), total, "{}: page count changed between passes", table.name);
    let auid = table.rowset;
    let mut entries = Vec::new();
    for (li, leaf) in leaves.iter().enumerate() {
        let mut p = PageBuf::new(pages[li], page::TYPE_DATA, auid);
        p.pminlen = layout.fixed_end as u16;
        if li > 0 {
            p.prev = pages[li - 1];
        }
        if li + 1 < leaves.len() {
            p.next = pages[li + 1];
        }
        for &i in leaf {
            p.add(&encoded[i].2);
        }
        if let Some(&i) = leaf.first() {
            entries.push((encoded[i].1.clone(), pages[li]));
        }
        let mixed = w.space.pfs(p.id) & PFS_MIXED;
        w.space.set_pfs(p.id, PFS_ALLOCATED | mixed);
        let id = p.id;
        w.sink.put(id, &p.finish())?;
    }
    let mut next = leaves.len();
    for (level, size) in (1u8..).zip(level_sizes) {
        let ids = &pages[next..next + size];
        let mut up = Vec::new();
        for (pi, chunk) in entries.chunks(per_page).enumerate() {
            let mut p = PageBuf::new(ids[pi], page::TYPE_INDEX, auid);
            p.level = level;
            p.pminlen = index_rec as u16;
            if pi > 0 {
                p.prev = ids[pi - 1];
            }
            if pi + 1 < size {
                p.next = ids[pi + 1];
            }
            for (key, child) in chunk {
                let mut rec = vec![3 << 1];
                rec.extend_from_slice(key);
                rec.extend_from_slice(&child.bytes());
                p.add(&rec);
            }
            up.push((chunk[0].0.clone(), ids[pi]));
            flush_index(w, p)?;
        }
        entries = up;
        next += size;
    }
    Ok((leaves.len() as u64, total as u64))
}

/// Writes the system tables, allocation pages, boot page and file headers.
pub(crate) fn write_catalog(w: &mut Writer, tables: &[TableMeta]) -> io::Result<()> {
    // Pass 1: how many pages each system table needs (row sizes do not depend on page ids).
    let placeholder = Catalog::default();
    let mut plans: Vec<(&'static SysTable, u64, u64)> = Vec::new();
    for t in systables::SYSTEM_TABLES {
        let rows = meta::system_rows(w.spec, t.id, tables, &placeholder);
        let (leaves, total) = write_system_table(w, t, &rows, None)?;
        plans.push((t, leaves, total));
    }
    // Allocate: sysallocunits starts at 1:20; the first 8 pages of each from mixed extents.
    let mut catalog = Catalog::default();
    let mut page_lists: Vec<Vec<PageId>> = Vec::new();
    let mut units: Vec<UnitPages> = Vec::new();
    for &(t, _, total) in &plans {
        let mut unit = UnitPages::new(true);
        let mut list = Vec::new();
        for i in 0..total {
            if t.id == systables::SYSALLOCUNITS && i == 0 {
                list.push(alloc::FIRST_SYS_INDEXES);
                unit.singles.push(alloc::FIRST_SYS_INDEXES);
                unit.pages += 1;
                continue;
            }
            list.push(unit.next_page(&mut w.space));
        }
        page_lists.push(list);
        units.push(unit);
    }
    // IAM pages (written now: their content is known).
    for ((&(t, leaves, total), list), unit) in plans.iter().zip(&page_lists).zip(units) {
        let first = list.first().copied().unwrap_or(PageId::NULL);
        let root = list.last().copied().unwrap_or(PageId::NULL);
        let _ = leaves;
        let m = finish_unit(w, unit, t.rowset, 1, first, root, total)?;
        catalog.system_units.push((t.id, m));
    }
    // Every page is allocated now: the files have their final sizes.
    catalog.file_pages = w.space.files.iter().map(|f| (f.file_id, file_pages(&w.space, f.file_id))).collect();
    // Pass 2: the real rows on the pages planned.
    for ((&(t, _, _), list), i) in plans.iter().zip(&page_lists).zip(0..) {
        let rows = meta::system_rows(w.spec, t.id, tables, &catalog);
        let _ = i;
        write_system_table(w, t, &rows, Some(list))?;
    }
    write_allocation_pages(w)?;
    Ok(())
}

/// File sizes in pages: whole megabytes, at least 8 MB for the primary file.
pub fn file_pages(space: &Space, file_id: u16) -> u32 {
    let f = space.files.iter().find(|f| f.file_id == file_id).expect("a file");
    let used = f.extent_count() * 8;
    let min = if file_id == 1 { 1024 } else { 128 };
    (used.div_ceil(128) * 128).max(min)
}

fn write_allocation_pages(w: &mut Writer) -> io::Result<()> {
    let file_ids: Vec<u16> = w.space.files.iter().map(|f| f.file_id).collect();
    for file_id in file_ids {
        let pages = file_pages(&w.space, file_id);
        // Boot page and sysallocunits' fixed page are allocated.
        if file_id == 1 {
            w.space.set_pfs(alloc::BOOT_PAGE, PFS_ALLOCATED | PFS_MIXED);
        }
        let f = w.space.file(file_id);
        let extents = pages / 8;
        for p in 0..8u32.min(pages) {
            if matches!(p, 0..=3 | 6 | 7) {
                f.set_pfs(p, PFS_ALLOCATED);
            }
        }
        // PFS pages.
        let mut start = 0;
        while start < pages {
            let id = PageId::new(file_id, start.max(1));
            let mut p = PageBuf::new(id, page::TYPE_PFS, page::ALLOCATION_PAGES_UNIT);
            let mut rec = vec![0u8; 4];
            rec[2..4].copy_from_slice(&8092u16.to_le_bytes());
            let f = w.space.file(file_id);
            for i in 0..alloc::PFS_INTERVAL {
                let pg = start + i;
                let b = if pg < pages { f.pfs.get(pg as usize).copied().unwrap_or(0) } else { 0 };
                let fixed = pg < pages && alloc::is_fixed_page(file_id, pg);
                rec.push(if fixed { b | PFS_ALLOCATED } else { b });
            }
            p.add(&rec);
            w.sink.put(id, &p.finish())?;
            start += alloc::PFS_INTERVAL;
        }
        // GAM, SGAM, differential and bulk-change maps per GAM interval.
        let mut interval = 0;
        while interval * alloc::GAM_INTERVAL < pages {
            let base = interval * alloc::GAM_INTERVAL;
            let f = w.space.file(file_id);
            let mut gam = vec![0u8; 7988];
            let mut sgam = vec![0u8; 7988];
            let mut dcm = vec![0u8; 7988];
            for e in 0..(alloc::GAM_INTERVAL / 8) {
                let extent = base / 8 + e;
                if extent >= extents {
                    break;
                }
                let state = f.extents.get(extent as usize).copied().unwrap_or(alloc::ExtentState::Free);
                let (byte, bit) = (e as usize / 8, e % 8);
                match state {
                    alloc::ExtentState::Free => gam[byte] |= 1 << bit,
                    alloc::ExtentState::Mixed => {
                        if f.mixed_has_free(extent) {
                            sgam[byte] |= 1 << bit;
                        }
                        dcm[byte] |= 1 << bit;
                    }
                    alloc::ExtentState::Uniform => dcm[byte] |= 1 << bit,
                }
            }
            for (offset, ty, bits) in [
                (2, page::TYPE_GAM, &gam),
                (3, page::TYPE_SGAM, &sgam),
                (6, page::TYPE_DIFF_MAP, &dcm),
                (7, page::TYPE_ML_MAP, &vec![0u8; 7988]),
            ] {
                let id = PageId::new(file_id, base + offset);
                let mut p = PageBuf::new(id, ty, page::ALLOCATION_PAGES_UNIT);
                p.pminlen = 90;
                let mut header = vec![0u8; 94];
                header[2..4].copy_from_slice(&94u16.to_le_bytes());
                p.add(&header);
                let mut rec = vec![0u8; 4];
                rec[2..4].copy_from_slice(&7992u16.to_le_bytes());
                rec.extend_from_slice(bits);
                p.add(&rec);
                let page = if ty == page::TYPE_ML_MAP { p.finish_unprotected() } else { p.finish() };
                w.sink.put(id, &page)?;
            }
            interval += 1;
        }
        // The file header page.
        let fh = meta::file_header_page(w.spec, file_id, pages);
        w.sink.put(PageId::new(file_id, 0), &fh)?;
        w.sink.set_pages(file_id, pages)?;
    }
    let boot = meta::boot_page(w.spec);
    w.sink.put(alloc::BOOT_PAGE, &boot)?;
    Ok(())
}
