//! FixedVar records, as the reader's `record.rs` documents them: status bytes, fixed-part end,
//! fixed-length data, column count and null bitmap, variable-length end offsets (top bit =
//! complex column: a pointer to off-row data), variable-length data.

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
const HAS_VAR_COLUMNS: u8 = 0x20;
const COMPLEX: u16 = 0x8000;

impl RecordLayout {
    /// Lays out columns in order: fixed-length ones at increasing offsets from 4 (bit columns
    /// packed eight to a byte), variable-length ones numbered in order. `fixed_len` is `None` for
    /// variable-length columns; `is_bit` marks bit columns.
    pub fn sequential(columns: &[(Option<usize>, bool)]) -> Self {
        let mut at = 4;
        let mut vars = 0;
        let mut bit_byte: Option<(usize, u8)> = None;
        let mut cols = Vec::new();
        for (i, &(fixed_len, is_bit)) in columns.iter().enumerate() {
            let null_bit = i + 1;
            if is_bit {
                let (offset, bit) = match bit_byte {
                    Some((o, b)) if b < 8 => (o, b),
                    _ => {
                        at += 1;
                        (at - 1, 0)
                    }
                };
                bit_byte = Some((offset, bit + 1));
                cols.push(PhysCol { fixed: Some((offset, 1)), var_index: None, null_bit, bit: Some(bit) });
            } else if let Some(len) = fixed_len {
                cols.push(PhysCol { fixed: Some((at, len)), var_index: None, null_bit, bit: None });
                at += len;
            } else {
                cols.push(PhysCol { fixed: None, var_index: Some(vars), null_bit, bit: None });
                vars += 1;
            }
        }
        RecordLayout { cols, fixed_end: at, var_count: vars }
    }

    /// Size of the record for these cells (a forwarded record adds its 10-byte back pointer).
    pub fn size(&self, cells: &[Cell], kind: Kind) -> usize {
        let (stored_vars, var_bytes) = self.var_extent(cells, kind);
        let mut n = self.fixed_end + 2 + self.cols.len().div_ceil(8);
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
        if let Kind::Forwarded { .. } = kind {
            // Every column's entry, then the back pointer.
            return (self.var_count + 1, bytes.iter().sum::<usize>() + 10);
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
        let mut bitmap = vec![0u8; self.cols.len().div_ceil(8)];
        let mut vars: Vec<(&[u8], bool)> = vec![(&[], false); self.var_count];
        for (c, cell) in self.cols.iter().zip(cells) {
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
        out.extend_from_slice(&(self.cols.len() as u16).to_le_bytes());
        out.extend_from_slice(&bitmap);
        if stored_vars == 0 {
            return;
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
