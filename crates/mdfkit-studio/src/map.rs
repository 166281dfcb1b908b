//! The allocation map: one cell per page of each file, coloured by a [`Mode`]:
//!
//! - **type**: what the page's header says it is (`mdfkit pages`' own list,
//!   [`mdfkit::recovery::list_pages`]), damaged pages (checksum mismatch, torn) in red, pages
//!   without a header naming themselves (never formatted, or unreadable) in white;
//! - **owner**: the table whose allocation unit the header names (the largest twelve in colours
//!   of their own, the rest together), from the catalog;
//! - **fullness** and **ghosts**: the page's PFS byte (how full; holds ghost records), read by
//!   [`mdfkit::page::allocation::PfsMap`];
//! - **damage**: the header's verdict, and once `check` has run ([`CheckRun`]) every page its
//!   findings name.
//!
//! Drawn on the server as a PNG of `COLUMNS` cells a row, `CELL` pixels a cell; the script turns a
//! click on a cell into a link to its page.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use axum::body::Bytes;
use mdfkit::page::allocation::{pfs_intervals, PfsByte, PfsMap};
use mdfkit::page::{PageId, PageType};
use mdfkit::recovery::PageSummary;
use mdfkit::Database;

/// Cells a row.
pub const COLUMNS: u32 = 128;
/// Pixels a cell side.
pub const CELL: u32 = 4;
/// Tables with a colour of their own in the owner mode; the others share one.
const OWNERS_COLOURED: usize = 12;

/// What a cell shows in the page-type mode.
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
    /// Every kind, in the legend's order.
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
            Kind::Damaged => DAMAGED,
            Kind::Unformatted => WHITE,
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

const DAMAGED: [u8; 3] = [0xe5, 0x39, 0x35];
const WHITE: [u8; 3] = [0xff, 0xff, 0xff];
const GREY: [u8; 3] = [0xb0, 0xbe, 0xc5];

/// How the map colours its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// By page type ([`Kind`]).
    Type,
    /// By the table owning the page.
    Owner,
    /// By the PFS byte's fullness.
    Fullness,
    /// Whether the PFS byte says the page holds ghost records.
    Ghosts,
    /// Damage: header verdicts, and `check`'s findings once it has run.
    Damage,
}

impl Mode {
    /// Every mode, in the menu's order.
    pub const ALL: [Mode; 5] = [Mode::Type, Mode::Owner, Mode::Fullness, Mode::Ghosts, Mode::Damage];

    /// The name in URLs (`?mode=owner`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Type => "type",
            Mode::Owner => "owner",
            Mode::Fullness => "fullness",
            Mode::Ghosts => "ghosts",
            Mode::Damage => "damage",
        }
    }

    /// The mode named `name` (`None`: the page-type mode).
    pub fn parse(name: Option<&str>) -> Option<Mode> {
        match name {
            None => Some(Mode::Type),
            Some(n) => Mode::ALL.into_iter().find(|m| m.name() == n),
        }
    }
}

/// One entry of a legend: label, colour, cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Legend {
    /// What the colour means.
    pub label: String,
    /// The colour.
    pub rgb: [u8; 3],
    /// Pages painted so, over all files.
    pub count: usize,
}

/// A painted map: the legend, and each file's cells as indexes into it.
pub struct Painted {
    /// The colours used, with their counts, from the most pages down.
    pub legend: Vec<Legend>,
    /// File id → one legend index per page.
    pub files: BTreeMap<u16, Vec<u16>>,
}

/// What is known of one page.
#[derive(Debug, Clone, Copy)]
struct Cell {
    kind: Kind,
    unit: i64,
    pfs: Option<u8>,
}

/// Every page's type, owner and PFS byte, read once.
pub struct AllocationMap {
    cells: BTreeMap<u16, Vec<Cell>>,
    /// Allocation unit id → owning table's name.
    owners: HashMap<i64, String>,
}

impl AllocationMap {
    /// Reads every page header and every PFS page of the database's files once.
    pub fn read(db: &Database) -> Self {
        let source = db.reader().source();
        let blank = Cell { kind: Kind::Unformatted, unit: 0, pfs: None };
        let mut cells: BTreeMap<u16, Vec<Cell>> =
            source.files().iter().map(|f| (f.file_id, vec![blank; f.page_count as usize])).collect();
        for page in mdfkit::recovery::list_pages(source, |_| true) {
            if let Some(cell) = cells.get_mut(&page.id.file).and_then(|c| c.get_mut(page.id.page as usize)) {
                *cell = Cell { kind: Kind::of(&page), unit: page.allocation_unit_id, pfs: None };
            }
        }
        for (file, file_cells) in cells.iter_mut() {
            for interval in pfs_intervals(file_cells.len() as u32) {
                let Ok(pfs) = db.reader().read(PageId::new(*file, interval.start.max(1))) else { continue };
                let Ok(map) = PfsMap::parse(&pfs) else { continue };
                for n in interval {
                    if let (Some(b), Some(cell)) = (map.get(PageId::new(*file, n)), file_cells.get_mut(n as usize)) {
                        cell.pfs = Some(b.0);
                    }
                }
            }
        }
        // Pages of a table's heap or clustered index and of their LOB and row-overflow data.
        let owners = db
            .catalog()
            .owners()
            .iter()
            .filter(|o| o.is_table() && o.holds_rows())
            .map(|o| (o.unit.id, o.object.clone()))
            .collect();
        AllocationMap { cells, owners }
    }

    /// Pages in each file.
    pub fn pages(&self) -> impl Iterator<Item = (u16, usize)> + '_ {
        self.cells.iter().map(|(f, c)| (*f, c.len()))
    }

    /// The map painted in `mode`; `damaged` holds the pages `check` found problems on (`None`:
    /// no check has finished).
    pub fn paint(&self, mode: Mode, damaged: Option<&std::collections::HashSet<PageId>>) -> Painted {
        let mut legend: Vec<Legend> = Vec::new();
        let mut index: HashMap<String, u16> = HashMap::new();
        // A label is looked up by reference: a million cells allocate no text.
        let mut entry = |label: &str, rgb: [u8; 3]| -> u16 {
            if let Some(&i) = index.get(label) {
                return i;
            }
            legend.push(Legend { label: label.to_string(), rgb, count: 0 });
            let i = (legend.len() - 1) as u16;
            index.insert(label.to_string(), i);
            i
        };
        // The fullness mode's entry of each fullness value, spelled once.
        let mut fullness_entries = [None; 8];
        // The owner mode's colours go to the tables with the most pages.
        let mut coloured: HashMap<&str, usize> = HashMap::new();
        if mode == Mode::Owner {
            // Pages by unit first (one integer key a cell), then by table.
            let mut by_unit: HashMap<i64, usize> = HashMap::new();
            for c in self.cells.values().flatten() {
                *by_unit.entry(c.unit).or_default() += 1;
            }
            let mut pages: HashMap<&str, usize> = HashMap::new();
            for (unit, n) in by_unit {
                if let Some(o) = self.owners.get(&unit) {
                    *pages.entry(o).or_default() += n;
                }
            }
            let mut by_size: Vec<(&str, usize)> = pages.into_iter().collect();
            by_size.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            coloured = by_size.iter().take(OWNERS_COLOURED).enumerate().map(|(i, (o, _))| (*o, i)).collect();
        }
        let mut unit_entries: HashMap<i64, u16> = HashMap::new();
        let mut files = BTreeMap::new();
        for (file, cells) in &self.cells {
            let mut painted = Vec::with_capacity(cells.len());
            for (n, c) in cells.iter().enumerate() {
                let i = match mode {
                    Mode::Type => entry(c.kind.name(), c.kind.rgb()),
                    Mode::Owner => match self.owners.get(&c.unit).map(String::as_str) {
                        // Each unit's entry found once: its table's name is hashed once, not per page.
                        Some(o) => *unit_entries.entry(c.unit).or_insert_with(|| match coloured.get(o) {
                            Some(&k) => entry(o, PALETTE[k]),
                            None => entry("other tables", GREY),
                        }),
                        None if c.unit != 0 && c.kind != Kind::Unformatted => {
                            entry("no table (indexes, internal)", [0x78, 0x90, 0x9c])
                        }
                        None => entry("no owner", WHITE),
                    },
                    Mode::Fullness => match c.pfs.map(PfsByte) {
                        Some(b) if b.allocated() => {
                            let full = usize::from(b.0 & 0x07);
                            *fullness_entries[full].get_or_insert_with(|| {
                                entry(&format!("allocated, {}", b.fullness()), FULLNESS[full.min(4)])
                            })
                        }
                        Some(_) => entry("not allocated", WHITE),
                        None => entry("no PFS byte", GREY),
                    },
                    Mode::Ghosts => match c.pfs.map(PfsByte) {
                        Some(b) if b.ghosts() => entry("ghost records", [0x6a, 0x1b, 0x9a]),
                        Some(b) if b.allocated() => entry("allocated, no ghost records", [0xc8, 0xe6, 0xc9]),
                        _ => entry("not allocated", WHITE),
                    },
                    Mode::Damage => {
                        let id = PageId::new(*file, n as u32);
                        if c.kind == Kind::Damaged {
                            entry("checksum mismatch or torn", DAMAGED)
                        } else if damaged.is_some_and(|d| d.contains(&id)) {
                            entry("problem found by check", [0xb7, 0x1c, 0x1c])
                        } else if c.kind == Kind::Unformatted {
                            entry("unformatted or unreadable", WHITE)
                        } else if damaged.is_some() {
                            entry("checked, no problem", [0x81, 0xc7, 0x84])
                        } else {
                            entry("header verdict ok (check not run)", GREY)
                        }
                    }
                };
                painted.push(i);
            }
            files.insert(*file, painted);
        }
        for i in files.values().flatten() {
            legend[usize::from(*i)].count += 1;
        }
        // The legend from the most pages down; the cells follow their entries.
        let mut order: Vec<usize> = (0..legend.len()).collect();
        order.sort_by(|&a, &b| legend[b].count.cmp(&legend[a].count).then(a.cmp(&b)));
        let mut moved_to = vec![0u16; legend.len()];
        for (new, &old) in order.iter().enumerate() {
            moved_to[old] = new as u16;
        }
        for i in files.values_mut().flatten() {
            *i = moved_to[usize::from(*i)];
        }
        let legend = order.into_iter().map(|i| legend[i].clone()).collect();
        Painted { legend, files }
    }
}

/// Colours of the tables with the most pages (owner mode).
const PALETTE: [[u8; 3]; OWNERS_COLOURED] = [
    [0x1e, 0x88, 0xe5],
    [0x43, 0xa0, 0x47],
    [0xfb, 0x8c, 0x00],
    [0x8e, 0x24, 0xaa],
    [0x00, 0xac, 0xc1],
    [0xd8, 0x1b, 0x60],
    [0x7c, 0xb3, 0x42],
    [0x5e, 0x35, 0xb1],
    [0xf4, 0x51, 0x1e],
    [0x00, 0x89, 0x7b],
    [0xc0, 0xca, 0x33],
    [0x6d, 0x4c, 0x41],
];

/// Fullness 0 (empty) to 4 (96-100 %), light to dark.
const FULLNESS: [[u8; 3]; 5] =
    [[0xe3, 0xf2, 0xfd], [0x90, 0xca, 0xf9], [0x42, 0xa5, 0xf5], [0x1e, 0x88, 0xe5], [0x0d, 0x47, 0xa1]];

impl Painted {
    /// File `file`'s map as a PNG: page `n` is the cell at column `n % COLUMNS`, row `n / COLUMNS`.
    pub fn png(&self, file: u16) -> Option<Vec<u8>> {
        let cells = self.files.get(&file)?;
        let rows = (cells.len() as u32).div_ceil(COLUMNS).max(1);
        let (width, height) = (COLUMNS * CELL, rows * CELL);
        let mut pixels = vec![0xeeu8; (width * height * 3) as usize];
        for (n, i) in cells.iter().enumerate() {
            let rgb = self.legend[usize::from(*i)].rgb;
            let (cx, cy) = (n as u32 % COLUMNS, n as u32 / COLUMNS);
            // A one-pixel gap right and below each cell keeps neighbours apart.
            for y in cy * CELL..cy * CELL + CELL - 1 {
                for x in cx * CELL..cx * CELL + CELL - 1 {
                    let at = ((y * width + x) * 3) as usize;
                    pixels[at..at + 3].copy_from_slice(&rgb);
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

/// PNGs drawn, kept for the next request: the most kept (the newest; a PNG of a 1 TB file's
/// map is about 1 MB).
const PNGS_KEPT: usize = 16;

/// The map's PNGs already drawn, by file, mode and whether `check` had finished (its findings
/// paint the damage mode): drawing one costs a paint of every page and an encoding (238 ms for
/// the 8 GB database's file), a request for one drawn costs a copy. At most 16 (`PNGS_KEPT`).
#[derive(Default)]
pub struct PngCache {
    drawn: Mutex<std::collections::VecDeque<(PngKey, Bytes)>>,
}

/// What a PNG of the map shows: (file id, mode, `check` finished).
type PngKey = (u16, Mode, bool);

impl PngCache {
    /// File `file`'s map in `mode` as a PNG (`None`: no such file), drawn by `draw` unless kept.
    /// The bytes are shared, not copied, with each answer.
    pub fn get_or_draw(&self, key: PngKey, draw: impl FnOnce() -> Option<Vec<u8>>) -> Option<Bytes> {
        if let Some((_, png)) = self.drawn.lock().ok()?.iter().find(|(k, _)| *k == key) {
            return Some(png.clone());
        }
        let png = Bytes::from(draw()?);
        if let Ok(mut drawn) = self.drawn.lock() {
            if drawn.len() == PNGS_KEPT {
                drawn.pop_front();
            }
            drawn.push_back((key, png.clone()));
        }
        Some(png)
    }
}

/// `mdfkit check`'s page check run in the background: progress while it runs, then its findings.
#[derive(Default)]
pub struct CheckRun {
    state: Mutex<CheckState>,
}

/// Where the background check stands.
#[derive(Debug, Clone, Default)]
pub struct CheckState {
    /// Started and not finished.
    pub running: bool,
    /// Pages checked so far.
    pub pages_done: u64,
    /// Pages in the files.
    pub pages_total: u64,
    /// The findings, once finished.
    pub problems: Option<Vec<mdfkit::check::Problem>>,
}

impl CheckState {
    /// The pages the finished check found problems on (`None` before it has finished).
    pub fn damaged_pages(&self) -> Option<std::collections::HashSet<PageId>> {
        Some(self.problems.as_ref()?.iter().filter_map(|p| p.page).collect())
    }
}

impl CheckRun {
    /// What the check has done so far.
    pub fn state(&self) -> CheckState {
        self.state.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Starts the check on its own thread unless one runs or has finished; `studio` is shared
    /// with the thread.
    pub fn start(studio: std::sync::Arc<crate::Studio>) {
        {
            let Ok(mut state) = studio.check.state.lock() else { return };
            if state.running || state.problems.is_some() {
                return;
            }
            state.running = true;
            state.pages_total = studio.db.reader().source().files().iter().map(|f| u64::from(f.page_count)).sum();
        }
        std::thread::spawn(move || {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
            let source = studio.db.reader().source();
            let (problems, _) = mdfkit::check::check_pages_on(source, threads, |done| {
                if let Ok(mut state) = studio.check.state.lock() {
                    state.pages_done = done;
                }
            });
            if let Ok(mut state) = studio.check.state.lock() {
                state.running = false;
                state.problems = Some(problems);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG is drawn once per file, mode and check state; the oldest goes once more are kept.
    #[test]
    fn pngs_are_drawn_once_and_the_oldest_forgotten() {
        let cache = PngCache::default();
        let draws = std::cell::Cell::new(0);
        let get = |key: PngKey| {
            cache.get_or_draw(key, || {
                draws.set(draws.get() + 1);
                Some(vec![key.0 as u8, key.2 as u8])
            })
        };
        assert_eq!(get((1, Mode::Owner, false)).unwrap().as_ref(), [1, 0]);
        assert_eq!(get((1, Mode::Owner, false)).unwrap().as_ref(), [1, 0]);
        assert_eq!(draws.get(), 1);
        assert_eq!(get((1, Mode::Owner, true)).unwrap().as_ref(), [1, 1], "check finished: drawn again");
        assert_eq!(get((1, Mode::Type, true)).unwrap().as_ref(), [1, 1]);
        assert_eq!(draws.get(), 3);
        for file in 2..(2 + PNGS_KEPT as u16) {
            get((file, Mode::Type, false));
        }
        assert_eq!(draws.get(), 3 + PNGS_KEPT);
        get((1, Mode::Owner, false));
        assert_eq!(draws.get(), 4 + PNGS_KEPT, "the first was forgotten");
        assert!(cache.get_or_draw((99, Mode::Type, false), || None).is_none(), "no such file");
    }
}
