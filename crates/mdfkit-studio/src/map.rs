//! The allocation map: one cell per page of each file, coloured by what the page's header says it
//! is (`mdfkit pages`' own list, [`mdfkit::recovery::list_pages`]), damaged pages (checksum
//! mismatch, torn) in red, pages without a header naming themselves (never formatted, or
//! unreadable) in white. Drawn on the server as a PNG of `COLUMNS` cells a row, `CELL` pixels a
//! cell; the page view script turns a click on a cell into a link to its page.

use std::collections::BTreeMap;

use mdfkit::page::PageType;
use mdfkit::recovery::PageSummary;
use mdfkit::Database;

/// Cells a row.
pub const COLUMNS: u32 = 128;
/// Pixels a cell side.
pub const CELL: u32 = 4;

/// What a cell shows, with its colour (RGB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A data page (type 1).
    Data,
    /// An index page (type 2).
    Index,
    /// A text mix or text tree page (types 3 and 4).
    Lob,
    /// A GAM, SGAM, IAM, PFS, differential or minimally logged map page.
    Allocation,
    /// Any other page type: boot, file header, sort...
    System,
    /// A checksum mismatch or torn write, whatever the page type.
    Damaged,
    /// No header naming the page itself: never formatted, or unreadable.
    Unformatted,
}

impl Kind {
    /// Every kind, in the legend's order; a kind's index here is its number in `/map.json`.
    pub const ALL: [Kind; 7] =
        [Kind::Data, Kind::Index, Kind::Lob, Kind::Allocation, Kind::System, Kind::Damaged, Kind::Unformatted];

    /// The legend's label.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Data => "data",
            Kind::Index => "index",
            Kind::Lob => "LOB (text mix / tree)",
            Kind::Allocation => "allocation (GAM, SGAM, PFS, IAM, diff/ML maps)",
            Kind::System => "boot, file header, other",
            Kind::Damaged => "damaged (checksum mismatch, torn)",
            Kind::Unformatted => "unformatted or unreadable",
        }
    }

    /// The cell colour.
    pub fn rgb(self) -> [u8; 3] {
        match self {
            Kind::Data => [0x43, 0xa0, 0x47],
            Kind::Index => [0x1e, 0x88, 0xe5],
            Kind::Lob => [0x8e, 0x24, 0xaa],
            Kind::Allocation => [0xfb, 0x8c, 0x00],
            Kind::System => [0x54, 0x6e, 0x7a],
            Kind::Damaged => [0xe5, 0x39, 0x35],
            Kind::Unformatted => [0xff, 0xff, 0xff],
        }
    }

    fn of(page: &PageSummary) -> Kind {
        if page.status.starts_with("checksum mismatch") || page.status.starts_with("torn") {
            return Kind::Damaged;
        }
        match page.page_type {
            PageType::Data => Kind::Data,
            PageType::Index => Kind::Index,
            PageType::TextMix | PageType::TextTree => Kind::Lob,
            PageType::Gam | PageType::Sgam | PageType::Iam | PageType::Pfs | PageType::DiffMap | PageType::MlMap => {
                Kind::Allocation
            }
            _ => Kind::System,
        }
    }
}

/// Each file's cells: file id → one kind per page.
pub struct AllocationMap {
    /// File id → the kind of each page, by page number.
    pub files: BTreeMap<u16, Vec<Kind>>,
}

impl AllocationMap {
    /// Reads every page header of the database's files once.
    pub fn read(db: &Database) -> Self {
        let source = db.reader().source();
        let mut files: BTreeMap<u16, Vec<Kind>> =
            source.files().iter().map(|f| (f.file_id, vec![Kind::Unformatted; f.page_count as usize])).collect();
        for page in mdfkit::recovery::list_pages(source, |_| true) {
            if let Some(cell) = files.get_mut(&page.id.file).and_then(|cells| cells.get_mut(page.id.page as usize)) {
                *cell = Kind::of(&page);
            }
        }
        AllocationMap { files }
    }

    /// Pages of each kind, over all files.
    pub fn counts(&self) -> BTreeMap<Kind, usize> {
        let mut counts = BTreeMap::new();
        for kind in self.files.values().flatten() {
            *counts.entry(*kind).or_default() += 1;
        }
        counts
    }

    /// File `file`'s map as a PNG: page `n` is the cell at column `n % COLUMNS`, row `n / COLUMNS`.
    pub fn png(&self, file: u16) -> Option<Vec<u8>> {
        let cells = self.files.get(&file)?;
        let rows = (cells.len() as u32).div_ceil(COLUMNS).max(1);
        let (width, height) = (COLUMNS * CELL, rows * CELL);
        let mut pixels = vec![0xeeu8; (width * height * 3) as usize];
        for (n, kind) in cells.iter().enumerate() {
            let (cx, cy) = (n as u32 % COLUMNS, n as u32 / COLUMNS);
            // A one-pixel gap right and below each cell keeps neighbours apart.
            for y in cy * CELL..cy * CELL + CELL - 1 {
                for x in cx * CELL..cx * CELL + CELL - 1 {
                    let at = ((y * width + x) * 3) as usize;
                    pixels[at..at + 3].copy_from_slice(&kind.rgb());
                }
            }
        }
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().ok()?;
        writer.write_image_data(&pixels).ok()?;
        writer.finish().ok()?;
        Some(out)
    }
}
