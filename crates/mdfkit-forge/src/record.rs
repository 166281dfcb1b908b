//! FixedVar records, as the reader's `record.rs` documents them: status bytes, fixed-part end,
//! fixed-length data, column count and null bitmap, variable-length end offsets (top bit =
//! complex column: a pointer to off-row data), variable-length data. Sparse columns have no
//! offset or null bit: a row's non-NULL sparse values go into its sparse vector, stored as the
//! last variable-length column, flagged complex (the reader's `rows.rs` documents its layout).

use crate::page::PageId;

/// Where one physical column lives in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhysCol {
    /// Offset and length in the fixed part.
    pub fixed: Option<(usize, usize)>,
    /// Index among the variable-length columns.
    pub var_index: Option<usize>,
    /// 1-based position in the null bitmap.
    pub null_bit: usize,
    /// Bit columns: the bit within the byte at the fixed offset.
    pub bit: Option<u8>,
    /// Sparse columns: the column id the sparse vector names it by (no offset, null bit 0).
    pub sparse_id: Option<u16>,
}

/// The physical layout of a rowset's leaf records.
#[derive(Debug, Clone, Default)]
pub struct RecordLayout {
    pub cols: Vec<PhysCol>,
    /// Offset of the end of the fixed part (4-byte header included): `pminlen`.
    pub fixed_end: usize,
    pub var_count: usize,
}

/// One column's stored form in one record.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    Null,
    Bytes(&'a [u8]),
    Bit(bool),
    /// A pointer to off-row data (variable-length columns only).
    Complex(&'a [u8]),
}

/// What kind of data record to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Primary,
    Ghost,
    /// A forwarded record, with the address of its forwarding stub.
    Forwarded {
        stub: PageId,
        slot: u16,
    },
}

const HAS_NULL_BITMAP: u8 = 0x10;
const SPARSE_VECTOR_HEADER: u16 = 5;
const HAS_VAR_COLUMNS: u8 = 0x20;
const COMPLEX: u16 = 0x8000;

impl RecordLayout {
    /// Lays out columns in order: fixed-length ones at increasing offsets from 4 (bit columns
    /// packed eight to a byte), variable-length ones numbered in order. `fixed_len` is `None` for
    /// variable-length columns; `is_bit` marks bit columns.
    pub fn sequential(columns: &[(Option<usize>, bool)]) -> Self {
        Self::with_sparse(columns, &[])
    }

    /// [`Self::sequential`], except that the columns `sparse` marks are sparse: kept out of the
    /// fixed part, the variable-length columns and the null bitmap (null bits number the other
    /// columns in order).
    pub fn with_sparse(columns: &[(Option<usize>, bool)], sparse: &[bool]) -> Self {
        let mut at = 4;
        let mut vars = 0;
        let mut bit_byte: Option<(usize, u8)> = None;
        let mut cols = Vec::new();
        let mut null_bit = 0;
        for (i, &(fixed_len, is_bit)) in columns.iter().enumerate() {
            if sparse.get(i).copied().unwrap_or(false) {
                let sparse_id = Some(i as u16 + 1);
                cols.push(PhysCol { fixed: None, var_index: None, null_bit: 0, bit: None, sparse_id });
                continue;
            }
            null_bit += 1;
            if is_bit {
                let (offset, bit) = match bit_byte {
                    Some((o, b)) if b < 8 => (o, b),
                    _ => {
                        at += 1;
                        (at - 1, 0)
                    }
                };
                bit_byte = Some((offset, bit + 1));
                cols.push(PhysCol {
                    fixed: Some((offset, 1)),
                    var_index: None,
                    null_bit,
                    bit: Some(bit),
                    sparse_id: None,
                });
            } else if let Some(len) = fixed_len {
                cols.push(PhysCol { fixed: Some((at, len)), var_index: None, null_bit, bit: None, sparse_id: None });
                at += len;
            } else {
                cols.push(PhysCol { fixed: None, var_index: Some(vars), null_bit, bit: None, sparse_id: None });
                vars += 1;
            }
        }
        RecordLayout { cols, fixed_end: at, var_count: vars }
    }

    /// Columns with a null bit (all but the sparse ones): the record's column count.
    fn null_columns(&self) -> usize {
        self.cols.iter().filter(|c| c.null_bit > 0).count()
    }

    /// The sparse vector of these cells: `None` when every sparse value is NULL.
    fn sparse_vector(&self, cells: &[Cell]) -> Option<Vec<u8>> {
        let values: Vec<(u16, &[u8])> = self
            .cols
            .iter()
            .zip(cells)
            .filter_map(|(c, cell)| match (c.sparse_id, cell) {
                (Some(id), Cell::Bytes(b)) => Some((id, *b)),
                (Some(id), Cell::Bit(b)) => Some((id, if *b { &[1u8][..] } else { &[0u8][..] })),
                _ => None,
            })
            .collect();
        if values.is_empty() {
            return None;
        }
        let mut v = Vec::new();
        v.extend_from_slice(&SPARSE_VECTOR_HEADER.to_le_bytes());
        v.extend_from_slice(&(values.len() as u16).to_le_bytes());
        for (id, _) in &values {
            v.extend_from_slice(&id.to_le_bytes());
        }
        let mut end = 4 + 4 * values.len();
        for (_, b) in &values {
            end += b.len();
            v.extend_from_slice(&(end as u16).to_le_bytes());
        }
        for (_, b) in &values {
            v.extend_from_slice(b);
        }
        Some(v)
    }

    /// Size of the record for these cells (a forwarded record adds its 10-byte back pointer).
    pub fn size(&self, cells: &[Cell], kind: Kind) -> usize {
        let (stored_vars, var_bytes) = self.var_extent(cells, kind);
        let mut n = self.fixed_end + 2 + self.null_columns().div_ceil(8);
        if stored_vars > 0 {
            n += 2 + 2 * stored_vars + var_bytes;
        }
        n
    }

    /// Variable-length entries stored (trailing NULLs are not) and their bytes.
    fn var_extent(&self, cells: &[Cell], kind: Kind) -> (usize, usize) {
        let mut last = 0;
        let mut bytes = vec![0usize; self.var_count];
        for (c, cell) in self.cols.iter().zip(cells) {
            if let Some(v) = c.var_index {
                match cell {
                    Cell::Bytes(b) | Cell::Complex(b) => {
                        bytes[v] = b.len();
                        last = last.max(v + 1);
                    }
                    _ => {}
                }
            }
        }
        let sparse = self.sparse_vector(cells).map(|v| v.len());
        if let Kind::Forwarded { .. } = kind {
            // Every column's entry, the sparse vector, then the back pointer.
            let vector = sparse.map_or((0, 0), |n| (1, n));
            return (self.var_count + vector.0 + 1, bytes.iter().sum::<usize>() + vector.1 + 10);
        }
        if let Some(n) = sparse {
            // The vector comes after every variable-length column's entry.
            return (self.var_count + 1, bytes.iter().sum::<usize>() + n);
        }
        (last, bytes[..last].iter().sum())
    }

    /// Encodes a data record into `out` (cleared first).
    pub fn encode(&self, cells: &[Cell], kind: Kind, out: &mut Vec<u8>) {
        out.clear();
        let (stored_vars, _) = self.var_extent(cells, kind);
        let record_type: u8 = match kind {
            Kind::Primary => 0,
            Kind::Forwarded { .. } => 1,
            Kind::Ghost => 6,
        };
        let mut status = record_type << 1 | HAS_NULL_BITMAP;
        if stored_vars > 0 {
            status |= HAS_VAR_COLUMNS;
        }
        out.extend_from_slice(&[status, 0]);
        out.extend_from_slice(&(self.fixed_end as u16).to_le_bytes());
        out.resize(self.fixed_end, 0);
        let mut bitmap = vec![0u8; self.null_columns().div_ceil(8)];
        let mut vars: Vec<(&[u8], bool)> = vec![(&[], false); self.var_count];
        for (c, cell) in self.cols.iter().zip(cells) {
            if c.sparse_id.is_some() {
                continue;
            }
            if matches!(cell, Cell::Null) {
                bitmap[(c.null_bit - 1) / 8] |= 1 << ((c.null_bit - 1) % 8);
                continue;
            }
            match (c.fixed, c.var_index, cell) {
                (Some((offset, _)), _, Cell::Bit(b)) => {
                    if *b {
                        out[offset] |= 1 << c.bit.unwrap_or(0);
                    }
                }
                (Some((offset, len)), _, Cell::Bytes(b)) => {
                    assert_eq!(b.len(), len, "fixed column of {len} bytes given {} bytes", b.len());
                    out[offset..offset + len].copy_from_slice(b);
                }
                (_, Some(v), Cell::Bytes(b)) => vars[v] = (b, false),
                (_, Some(v), Cell::Complex(b)) => vars[v] = (b, true),
                _ => panic!("cell {cell:?} does not fit column {c:?}"),
            }
        }
        out.extend_from_slice(&(self.null_columns() as u16).to_le_bytes());
        out.extend_from_slice(&bitmap);
        if stored_vars == 0 {
            return;
        }
        let vector = self.sparse_vector(cells);
        if let Some(v) = &vector {
            vars.push((v, true));
        }
        let back;
        if let Kind::Forwarded { stub, slot } = kind {
            let mut b = vec![0x00, 0x04];
            b.extend_from_slice(&stub.bytes());
            b.extend_from_slice(&slot.to_le_bytes());
            back = b;
            vars.push((&back, true));
        }
        out.extend_from_slice(&(stored_vars as u16).to_le_bytes());
        let table = out.len();
        out.resize(table + 2 * stored_vars, 0);
        for (i, (bytes, complex)) in vars.iter().take(stored_vars).enumerate() {
            out.extend_from_slice(bytes);
            let end = out.len() as u16 | if *complex { COMPLEX } else { 0 };
            out[table + 2 * i..table + 2 * i + 2].copy_from_slice(&end.to_le_bytes());
        }
    }
}

/// A heap's forwarding stub: status (record type 2), then the forwarded record's page, file, slot.
pub fn forwarding_stub(target: PageId, slot: u16) -> Vec<u8> {
    let mut r = vec![2 << 1];
    r.extend_from_slice(&target.bytes());
    r.extend_from_slice(&slot.to_le_bytes());
    r
}
