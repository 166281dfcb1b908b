//! Page building: the 96-byte header, records from the top, the slot array from the bottom, and
//! the page checksum. Layout as documented in the reader's `page/mod.rs`; checksum as in
//! `page/protection.rs`.

pub const PAGE_SIZE: usize = 8192;
/// The LSN of every forged page (header +40): one log record of the forge's "creation"
/// transaction. A forged log ([`crate::log`]) starts after it.
pub const FORGED_PAGE_LSN: crate::log::Lsn = crate::log::Lsn { vlf: 0x26, block: 0x10, slot: 1 };
pub const HEADER_SIZE: usize = 96;
/// Page header type bit: a PAGE compression CI structure follows the header.
pub const TYPE_FLAG_HAS_CI: u8 = 0x80;
/// Largest record SQL Server stores on a data page.
pub const MAX_RECORD: usize = 8060;

pub const TYPE_DATA: u8 = 1;
pub const TYPE_INDEX: u8 = 2;
pub const TYPE_TEXT_MIX: u8 = 3;
pub const TYPE_GAM: u8 = 8;
pub const TYPE_SGAM: u8 = 9;
pub const TYPE_IAM: u8 = 10;
pub const TYPE_PFS: u8 = 11;
pub const TYPE_BOOT: u8 = 13;
pub const TYPE_FILE_HEADER: u8 = 15;
pub const TYPE_DIFF_MAP: u8 = 16;
pub const TYPE_ML_MAP: u8 = 17;

/// Header flag: checksum protected.
const FLAG_CHECKSUM: u16 = 0x200;
/// Allocation unit of the allocation and boot pages (object id 99, index 0), as in every corpus file.
pub const ALLOCATION_PAGES_UNIT: i64 = 99 << 16;

/// A page address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PageId {
    pub file: u16,
    pub page: u32,
}

impl PageId {
    pub const NULL: PageId = PageId { file: 0, page: 0 };

    pub const fn new(file: u16, page: u32) -> Self {
        PageId { file, page }
    }

    pub fn is_null(self) -> bool {
        self == PageId::NULL
    }

    /// The 6-byte on-disk pointer: page (4), file (2).
    pub fn bytes(self) -> [u8; 6] {
        let mut b = [0u8; 6];
        b[..4].copy_from_slice(&self.page.to_le_bytes());
        b[4..].copy_from_slice(&self.file.to_le_bytes());
        b
    }
}

/// A page being filled.
pub struct PageBuf {
    pub id: PageId,
    pub bytes: Box<[u8]>,
    free_data: usize,
    slots: u16,
    pub ghosts: u16,
    pub prev: PageId,
    pub next: PageId,
    pub level: u8,
    pub pminlen: u16,
    /// A PAGE compressed page to start with a CI structure, made from its first row.
    pub wants_ci: bool,
    /// The page's anchor and dictionary, its records stored against them.
    pub ci: Option<crate::cd::PageCi>,
}

impl PageBuf {
    pub fn new(id: PageId, page_type: u8, unit: i64) -> Self {
        let mut bytes = vec![0u8; PAGE_SIZE].into_boxed_slice();
        bytes[0] = 1;
        bytes[1] = page_type;
        bytes[6..8].copy_from_slice(&((unit >> 48) as u16).to_le_bytes());
        bytes[24..28].copy_from_slice(&(((unit >> 16) & 0xffff_ffff) as u32).to_le_bytes());
        bytes[32..38].copy_from_slice(&id.bytes());
        PageBuf {
            id,
            bytes,
            free_data: HEADER_SIZE,
            slots: 0,
            ghosts: 0,
            prev: PageId::NULL,
            next: PageId::NULL,
            level: 0,
            pminlen: 0,
            wants_ci: false,
            ci: None,
        }
    }

    pub fn slot_count(&self) -> u16 {
        self.slots
    }

    /// Puts a PAGE compression CI structure (`crate::cd::compression_info`) before the records
    /// and flags it in the header's type bits (0x80); only on a page without records yet.
    pub fn set_compression_info(&mut self, ci: &[u8]) {
        assert_eq!(self.slots, 0, "the CI structure comes before every record");
        self.bytes[HEADER_SIZE..HEADER_SIZE + ci.len()].copy_from_slice(ci);
        self.free_data = HEADER_SIZE + ci.len();
        self.bytes[2] |= TYPE_FLAG_HAS_CI;
    }

    /// Bytes left for records and their slots.
    pub fn free(&self) -> usize {
        PAGE_SIZE - self.free_data - 2 * self.slots as usize
    }

    /// Whether a record of `len` bytes (and its slot) fits.
    pub fn fits(&self, len: usize) -> bool {
        self.free() >= len + 2
    }

    /// Appends a record; returns its slot.
    pub fn add(&mut self, record: &[u8]) -> u16 {
        assert!(self.fits(record.len()), "record of {} bytes does not fit page {:?}", record.len(), self.id);
        let at = self.free_data;
        self.bytes[at..at + record.len()].copy_from_slice(record);
        self.free_data += record.len();
        let slot = self.slots;
        let s = PAGE_SIZE - 2 * (slot as usize + 1);
        self.bytes[s..s + 2].copy_from_slice(&(at as u16).to_le_bytes());
        self.slots += 1;
        slot
    }

    /// Bytes used by records.
    pub fn used(&self) -> usize {
        self.free_data - HEADER_SIZE
    }

    /// Completes the header and the checksum; returns the page bytes.
    pub fn finish(self) -> Box<[u8]> {
        self.complete(true)
    }

    /// Completes the header of a page SQL Server writes without a checksum (minimally logged
    /// map pages: their header flags are 0 in every corpus file).
    pub fn finish_unprotected(self) -> Box<[u8]> {
        self.complete(false)
    }

    fn complete(mut self, protected: bool) -> Box<[u8]> {
        let free = self.free() as u16;
        let b = &mut self.bytes;
        b[3] = self.level;
        let flags = if protected { FLAG_CHECKSUM } else { 0 };
        b[4..6].copy_from_slice(&flags.to_le_bytes());
        b[8..14].copy_from_slice(&self.prev.bytes());
        b[14..16].copy_from_slice(&self.pminlen.to_le_bytes());
        b[16..22].copy_from_slice(&self.next.bytes());
        b[22..24].copy_from_slice(&self.slots.to_le_bytes());
        b[28..30].copy_from_slice(&free.to_le_bytes());
        b[30..32].copy_from_slice(&(self.free_data as u16).to_le_bytes());
        b[40..50].copy_from_slice(&FORGED_PAGE_LSN.bytes());
        b[58..60].copy_from_slice(&self.ghosts.to_le_bytes());
        if protected {
            seal(b);
        }
        self.bytes
    }
}

/// Writes the page checksum (the page must carry the checksum flag).
pub fn seal(page: &mut [u8]) {
    let c = checksum(page);
    page[60..64].copy_from_slice(&c.to_le_bytes());
}

/// The page checksum: 16 sectors of 128 words XORed, sector `i` rotated left by `15 - i`, the
/// checksum field counted as zero.
pub fn checksum(page: &[u8]) -> u32 {
    let mut sum = 0u32;
    for (i, sector) in page.chunks_exact(512).enumerate() {
        let mut x = 0u32;
        for (w, word) in sector.chunks_exact(4).enumerate() {
            if i == 0 && w == 15 {
                continue;
            }
            x ^= u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        }
        sum ^= x.rotate_left(15 - i as u32);
    }
    sum
}
