//! Collations: the id SQL Server stores (`dbi_collation` on the boot page, `syscolpars.collationid`,
//! a sql_variant's properties), its name, and the code page of char/varchar/text stored under it.
//!
//! A collation id is `COLLATIONPROPERTY(name, 'CollationID')`. Its bits, read from SQL Server's own
//! list of ids (`data/collations.tsv`, which names its sources) and checked on the corpus:
//!
//! | bits  | meaning |
//! |-------|---------|
//! | 0-7   | Windows collation designator (its index within its version; 8 = Latin1_General) |
//! | 8     | `_SC` (supplementary characters) for `_90`/`_100`; set on every non-binary `_140` |
//! | 9     | `_140` only: variation selectors ignored (clear: `_VSS`) |
//! | 11    | `_BIN2` |
//! | 12-15 | ignore case (`_CI`), accent (`_AI`), kana (no `_KS`), width (no `_WS`) |
//! | 16    | `_BIN` |
//! | 17-19 | version: 0 (SQL Server 2000 names), 1 `_90`, 2 `_100`, 3 `_140` |
//! | 24-31 | SQL sort order id (`SERVERPROPERTY('SqlSortOrder')`), 0 for Windows collations |
//!
//! SQL collations (sort id set) are listed whole; a Windows collation is its designator (version,
//! index) with the comparison style suffixes. An id with other bits set or an unlisted designator
//! is not named: it is shown as its number, and text under it is decoded only where it is plain
//! ASCII (the same bytes in every code page), else refused by name.
//!
//! The `_UTF8` collations of SQL Server 2019 (code page 65001) are such ids: which bit of the id
//! marks them, no source at hand shows (not bit 10: SQL Server 2012's AdventureWorksLT already
//! sets it, on an XML index's internal `Latin1_General_BIN2` column, id 3080). In their TDS form
//! (backup headers) the flag is documented, and [`name_from_tds`] names them.
//!
//! Text is decoded in the collation's code page: Windows-1252 by our own table (the hot path of
//! Latin1 varchar: on accented words, release build, this machine, 170-234 MB/s against
//! `encoding_rs`' 104-124 MB/s through `decode` and 193-228 MB/s through a decoder into the
//! caller's string), 874, 932, 936, 949, 950 and 1250-1258 by `encoding_rs` (a decoder into the
//! caller's string), and the OEM code pages 437 and 850 of the `SQL_Latin1_General_CP437/CP850`
//! collations, which `encoding_rs` lacks, by tables generated from Unicode's mapping files
//! (`MICSFT/PC/CP437.TXT`, `CP850.TXT`, as Python's codecs carry them). Unicode-only collations
//! (code page 0) cannot hold char/varchar data.
//!
//! The three single-byte tables are kept as the UTF-8 bytes of each of the 256 bytes
//! (`Utf8Table`, built from the character tables at compile time): a byte's spelling is three
//! bytes copied and a length, no branch on the character. Text is written as UTF-8 bytes
//! ([`TextCodec::decode_into_utf8`], a scan's Arrow strings: checked as UTF-8 once for a page's
//! values) or into a string through a buffer on the stack (checked a chunk at a time).

use std::sync::OnceLock;

use crate::bytes::Utf8Writer;
use crate::error::{Error, Result};

/// SQL Server's list of collations (see its header for the sources).
const TABLE: &str = include_str!("../../data/collations.tsv");

const DESIGNATOR_INDEX: u32 = 0xFF;
const SUPPLEMENTARY: u32 = 1 << 8;
const IGNORE_VARIATION_SELECTORS: u32 = 1 << 9;
const BINARY2: u32 = 1 << 11;
const IGNORE_CASE: u32 = 1 << 12;
const IGNORE_ACCENT: u32 = 1 << 13;
const IGNORE_KANA: u32 = 1 << 14;
const IGNORE_WIDTH: u32 = 1 << 15;
const BINARY: u32 = 1 << 16;
const VERSION_SHIFT: u32 = 17;
const VERSION_MASK: u32 = 0x7;
/// Every bit a listed Windows collation id may have.
const WINDOWS_BITS: u32 = DESIGNATOR_INDEX
    | SUPPLEMENTARY
    | IGNORE_VARIATION_SELECTORS
    | BINARY2
    | IGNORE_CASE
    | IGNORE_ACCENT
    | IGNORE_KANA
    | IGNORE_WIDTH
    | BINARY
    | (VERSION_MASK << VERSION_SHIFT);

/// Where char/varchar text under a collation comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodePage {
    /// A Windows (ANSI), DBCS or OEM code page.
    Ansi(u16),
    /// No code page: the collation serves nchar/nvarchar only.
    UnicodeOnly,
}

/// A collation SQL Server lists, resolved from its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collation {
    /// The collation's name, as `sys.fn_helpcollations` lists it.
    pub name: String,
    /// The Windows locale of its rules (`COLLATIONPROPERTY(name, 'LCID')`); 0 for SQL collations.
    pub lcid: u32,
    /// The code page of its char/varchar/text values.
    pub code_page: CodePage,
}

struct Designator {
    version: u32,
    index: u32,
    name: &'static str,
    lcid: u32,
    code_page: CodePage,
}

struct SqlCollation {
    id: u32,
    name: &'static str,
    code_page: CodePage,
}

struct Table {
    /// Sorted by (version, index).
    designators: Vec<Designator>,
    /// Sorted by id.
    sql: Vec<SqlCollation>,
}

fn table() -> &'static Table {
    static PARSED: OnceLock<Table> = OnceLock::new();
    PARSED.get_or_init(|| parse_table(TABLE))
}

/// Parses the table; a malformed line is skipped (the tests check that every line parses).
fn parse_table(text: &'static str) -> Table {
    let mut table = Table { designators: Vec::new(), sql: Vec::new() };
    for fields in text.lines().filter(|l| !l.starts_with('#')).map(|l| l.split('\t').collect::<Vec<_>>()) {
        match fields.as_slice() {
            ["windows", version, index, name, lcid, code_page] => {
                if let (Ok(version), Ok(index), Ok(lcid), Ok(code_page)) =
                    (version.parse(), index.parse(), lcid.parse(), code_page.parse())
                {
                    table.designators.push(Designator {
                        version,
                        index,
                        name,
                        lcid,
                        code_page: code_page_of(code_page),
                    });
                }
            }
            ["sql", id, name, code_page] => {
                let id = id.strip_prefix("0x").and_then(|h| u32::from_str_radix(h, 16).ok());
                if let (Some(id), Ok(code_page)) = (id, code_page.parse()) {
                    table.sql.push(SqlCollation { id, name, code_page: code_page_of(code_page) });
                }
            }
            _ => {}
        }
    }
    table.designators.sort_by_key(|d| (d.version, d.index));
    table.sql.sort_by_key(|s| s.id);
    table
}

fn code_page_of(number: u16) -> CodePage {
    if number == 0 {
        CodePage::UnicodeOnly
    } else {
        CodePage::Ansi(number)
    }
}

/// A listed collation found from its id, before its name is spelled.
enum Found {
    Windows(&'static Designator, u32),
    Sql(&'static SqlCollation),
}

fn find(id: u32) -> Option<Found> {
    let table = table();
    if id >> 24 != 0 {
        return table.sql.binary_search_by_key(&id, |s| s.id).ok().map(|i| Found::Sql(&table.sql[i]));
    }
    if id & !WINDOWS_BITS != 0 {
        return None;
    }
    let key = ((id >> VERSION_SHIFT) & VERSION_MASK, id & DESIGNATOR_INDEX);
    let designator = &table.designators[table.designators.binary_search_by_key(&key, |d| (d.version, d.index)).ok()?];
    style_suffix(id, designator.version).map(|_| Found::Windows(designator, id))
}

/// The comparison-style part of a Windows collation's name (`_CI_AS_KS_SC`, `_BIN2`, ...), or
/// `None` for a combination of bits SQL Server does not list.
fn style_suffix(id: u32, version: u32) -> Option<String> {
    let style = id & (BINARY | BINARY2 | IGNORE_CASE | IGNORE_ACCENT | IGNORE_KANA | IGNORE_WIDTH);
    let extensions = id & (SUPPLEMENTARY | IGNORE_VARIATION_SELECTORS);
    match style {
        BINARY | BINARY2 if extensions != 0 => None,
        BINARY => Some("_BIN".into()),
        BINARY2 => Some("_BIN2".into()),
        _ if style & (BINARY | BINARY2) != 0 => None,
        _ => {
            let mut suffix = String::with_capacity(16);
            suffix.push_str(if style & IGNORE_CASE != 0 { "_CI" } else { "_CS" });
            suffix.push_str(if style & IGNORE_ACCENT != 0 { "_AI" } else { "_AS" });
            if style & IGNORE_KANA == 0 {
                suffix.push_str("_KS");
            }
            if style & IGNORE_WIDTH == 0 {
                suffix.push_str("_WS");
            }
            match (version, extensions) {
                (0, 0) | (1 | 2, 0) => {}
                (1 | 2, SUPPLEMENTARY) => suffix.push_str("_SC"),
                (3, SUPPLEMENTARY) => suffix.push_str("_VSS"),
                (3, e) if e == SUPPLEMENTARY | IGNORE_VARIATION_SELECTORS => {}
                _ => return None,
            }
            Some(suffix)
        }
    }
}

impl Found {
    fn code_page(&self) -> CodePage {
        match self {
            Found::Windows(d, _) => d.code_page,
            Found::Sql(s) => s.code_page,
        }
    }

    fn collation(&self) -> Collation {
        match self {
            Found::Windows(d, id) => Collation {
                name: format!("{}{}", d.name, style_suffix(*id, d.version).unwrap_or_default()),
                lcid: d.lcid,
                code_page: d.code_page,
            },
            Found::Sql(s) => Collation { name: s.name.to_string(), lcid: 0, code_page: s.code_page },
        }
    }
}

/// The collation SQL Server lists under `id`, if any.
pub fn lookup(id: u32) -> Option<Collation> {
    find(id).map(|f| f.collation())
}

/// The code page of char/varchar text under collation `id`, if the id is listed.
pub fn code_page(id: u32) -> Option<CodePage> {
    find(id).map(|f| f.code_page())
}

/// The collation's name, or `collation id N` for an id SQL Server's list does not hold.
pub fn name(id: u32) -> String {
    lookup(id).map_or_else(|| format!("collation id {id}"), |c| c.name)
}

/// Whether text under collation `id` compares without regard to case (`_CI` in its name: bit 12
/// of the id, for Windows and SQL collations alike). An id SQL Server's list does not hold is
/// taken as case-sensitive: compared exactly, two values are never wrongly taken as one.
pub fn ignores_case(id: u32) -> bool {
    find(id).is_some() && id & IGNORE_CASE != 0
}

/// Every collation SQL Server lists, as (id, name): SQL Server 2017's `sys.fn_helpcollations()`.
pub fn all() -> Vec<(u32, String)> {
    let table = table();
    let mut out = Vec::new();
    for d in &table.designators {
        let base = (d.version << VERSION_SHIFT) | d.index;
        let extensions: &[u32] = match d.version {
            0 => &[0],
            1 | 2 => &[0, SUPPLEMENTARY],
            _ => &[SUPPLEMENTARY, SUPPLEMENTARY | IGNORE_VARIATION_SELECTORS],
        };
        let styles = [BINARY, BINARY2]
            .into_iter()
            .map(|b| base | b)
            .chain(extensions.iter().flat_map(|e| (0..16).map(move |f| base | e | (f << 12))));
        for id in styles {
            if let Some(suffix) = style_suffix(id, d.version) {
                out.push((id, format!("{}{suffix}", d.name)));
            }
        }
    }
    out.extend(table.sql.iter().map(|s| (s.id, s.name.to_string())));
    out
}

/// The collation id of a collation in its TDS form (backup headers, [MS-TDS] 2.2.5.1.2: LCID in
/// bits 0-19, flags ignore case/accent/kana/width, binary, binary2, UTF-8 in bits 20-26, version
/// in bits 28-31; then the SQL sort id). The TDS form does not carry `_SC` or `_VSS`: a `_90`,
/// `_100` or `_140` collation is named without them. `None` for a form SQL Server's list lacks.
pub fn id_from_tds(info: u32, sort_id: u8) -> Option<u32> {
    let table = table();
    if sort_id != 0 {
        return table.sql.iter().find(|s| s.id >> 24 == u32::from(sort_id)).map(|s| s.id);
    }
    let (lcid, flags, version) = (info & 0xF_FFFF, (info >> 20) & 0xFF, info >> 28);
    let mut designators = table.designators.iter().filter(|d| d.version == version && d.lcid == lcid);
    let designator = designators.next().filter(|_| designators.next().is_none())?;
    let style = [IGNORE_CASE, IGNORE_ACCENT, IGNORE_KANA, IGNORE_WIDTH, BINARY, BINARY2]
        .iter()
        .enumerate()
        .filter(|(bit, _)| flags & (1 << bit) != 0)
        .fold(0, |id, (_, style_bit)| id | style_bit);
    let binary = style & (BINARY | BINARY2) != 0;
    let extensions = match version {
        3 if !binary => SUPPLEMENTARY | IGNORE_VARIATION_SELECTORS,
        _ => 0,
    };
    let id = (version << VERSION_SHIFT) | designator.index | style | extensions;
    (flags >> 6 == 0 && find(id).is_some()).then_some(id)
}

/// [MS-TDS] 2.2.5.1.2 `fUTF8`: flag bit 6 of the TDS form, bit 26 of its first four bytes (seen
/// as `0x26000409`, Latin1_General_100_BIN2_UTF8, on SQL Server 2025: hugr-lab/mssql-extension
/// pull request 305).
const TDS_UTF8: u32 = 1 << 26;

/// The name of a collation given in its TDS form (a backup header's), `_UTF8` ones included:
/// SQL Server 2019 appends `_UTF8` to every supplementary-character-aware collation (`_SC` of
/// `_90`/`_100`, every non-binary `_140`; Microsoft, "Collation and Unicode support") and has one
/// binary UTF-8 collation, Latin1_General_100_BIN2_UTF8. The TDS form cannot say `_VSS`: a `_140`
/// one is named without it. `None` for a form SQL Server's list lacks.
pub fn name_from_tds(info: u32, sort_id: u8) -> Option<String> {
    if info & TDS_UTF8 == 0 {
        return id_from_tds(info, sort_id).map(name);
    }
    let id = id_from_tds(info & !TDS_UTF8, sort_id).filter(|_| sort_id == 0)?;
    let twin = lookup(id)?.name;
    match ((id >> VERSION_SHIFT) & VERSION_MASK, id & (BINARY | BINARY2)) {
        (1 | 2, 0) => Some(format!("{twin}_SC_UTF8")),
        (3, 0) => Some(format!("{twin}_UTF8")),
        (2, BINARY2) if twin == "Latin1_General_100_BIN2" => Some(format!("{twin}_UTF8")),
        _ => None,
    }
}

/// Decodes char/varchar bytes stored under collation `id` (the collation looked up for this one
/// value: a column's values go through its [`TextCodec`] instead).
pub fn decode_text(id: u32, bytes: &[u8]) -> Result<String> {
    let mut text = String::new();
    TextCodec::new(id).decode_into(bytes, &mut text)?;
    Ok(text)
}

/// How char/varchar text under one collation is decoded: the collation's code page, resolved once
/// (when a column's plan is built) rather than per value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextCodec {
    collation_id: u32,
    code_page: Option<CodePage>,
}

impl TextCodec {
    /// The codec of collation `id`; an id SQL Server's list lacks still decodes ASCII.
    pub fn new(collation_id: u32) -> Self {
        TextCodec { collation_id, code_page: code_page(collation_id) }
    }

    /// Decodes `bytes` into a new string.
    pub fn decode(&self, bytes: &[u8]) -> Result<String> {
        let mut text = String::new();
        self.decode_into(bytes, &mut text)?;
        Ok(text)
    }

    /// Appends `bytes` decoded to `out` (no allocation per value). ASCII reads the same in every
    /// code page; other text needs the collation's code page, and is refused by name where the id
    /// is not listed or the collation is Unicode-only.
    pub fn decode_into(&self, bytes: &[u8], out: &mut String) -> Result<()> {
        if let Some(Ok(ascii)) = bytes.is_ascii().then(|| std::str::from_utf8(bytes)) {
            out.push_str(ascii);
            return Ok(());
        }
        match self.code_page {
            Some(CodePage::Ansi(cp)) if push_code_page(cp, bytes, out) => Ok(()),
            _ => Err(self.refusal()),
        }
    }

    /// Appends `bytes` decoded to `out` as UTF-8 bytes, as [`Self::decode_into`] spells them; a
    /// caller checks them as UTF-8 once for many values (a scan's page of varchar values).
    pub fn decode_into_utf8(&self, bytes: &[u8], out: &mut Utf8Writer) -> Result<()> {
        match self.code_page {
            Some(CodePage::Ansi(cp)) if push_code_page_utf8(cp, bytes, out) => Ok(()),
            _ if bytes.is_ascii() => {
                out.push_bytes(bytes);
                Ok(())
            }
            _ => Err(self.refusal()),
        }
    }

    /// The collation's single-byte code page table, when it has one of ours (1252, 437, 850):
    /// found once for a run of values, so that each value goes straight to the table's
    /// encoder (what [`Self::decode_into_utf8`] does with it, without its two matches a value).
    pub fn single_byte(&self) -> Option<SingleByteText> {
        match self.code_page {
            Some(CodePage::Ansi(cp)) => single_byte_table(cp).map(SingleByteText),
            _ => None,
        }
    }

    /// Whether [`Self::decode_into`] reads `bytes`, without decoding them: ASCII always, other
    /// bytes where the collation's code page has a decoder (every decoder reads every byte, so
    /// the code page alone decides). A check verifies text this way where nothing needs it
    /// spelled.
    pub fn check(&self, bytes: &[u8]) -> Result<()> {
        match self.code_page {
            Some(CodePage::Ansi(cp)) if has_code_page_decoder(cp) => Ok(()),
            _ if bytes.is_ascii() => Ok(()),
            _ => Err(self.refusal()),
        }
    }

    /// The error for non-ASCII text this codec has no decoder for.
    fn refusal(&self) -> Error {
        let id = self.collation_id;
        match self.code_page {
            Some(CodePage::Ansi(cp)) => Error::unsupported(format!(
                "text in collation {} (code page {cp}), which mdfkit cannot decode",
                name(id)
            )),
            Some(CodePage::UnicodeOnly) => Error::unsupported(format!(
                "text in collation {}, which is Unicode-only: it has no code page for char/varchar bytes",
                name(id)
            )),
            None => Error::unsupported(format!(
                "text in collation id {id}, which is not in SQL Server's list of collations known to mdfkit"
            )),
        }
    }
}

/// `bytes` in code page `cp` (as binary XML spells a varchar's code page), or `None` when they are
/// not plain ASCII and mdfkit has no decoder for the code page.
pub fn decode_code_page(cp: u32, bytes: &[u8]) -> Option<String> {
    let mut text = String::new();
    match bytes.is_ascii().then(|| std::str::from_utf8(bytes)) {
        Some(Ok(ascii)) => text.push_str(ascii),
        _ => {
            if !u16::try_from(cp).is_ok_and(|cp| push_code_page(cp, bytes, &mut text)) {
                return None;
            }
        }
    }
    Some(text)
}

/// Whether [`push_code_page`] has a decoder for code page `cp` (it then reads any bytes).
fn has_code_page_decoder(cp: u16) -> bool {
    single_byte_table(cp).is_some() || encoding_of(cp).is_some()
}

/// Appends `bytes` decoded in Windows code page `cp`; false when mdfkit has no decoder for it.
/// Bytes that are no character of the code page read as U+FFFD. A single-byte code page goes
/// through `single_byte_to_utf8` a chunk at a time into a buffer on the stack, checked as UTF-8
/// once a chunk.
pub fn push_code_page(cp: u16, bytes: &[u8], out: &mut String) -> bool {
    const CHUNK: usize = 64;
    if let Some(table) = single_byte_table(cp) {
        let mut chunk = [0u8; 3 * CHUNK];
        for part in bytes.chunks(CHUNK) {
            let written = single_byte_to_utf8(table, part, &mut chunk);
            crate::bytes::push_utf8_chunk(out, &mut chunk, written);
        }
        return true;
    }
    let Some(encoding) = encoding_of(cp) else { return false };
    // Straight into `out`: no intermediate string per value.
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut rest = bytes;
    loop {
        out.reserve(decoder.max_utf8_buffer_length(rest.len()).unwrap_or(rest.len()));
        let (result, read, _) = decoder.decode_to_string(rest, out, true);
        rest = rest.get(read..).unwrap_or_default();
        if result == encoding_rs::CoderResult::InputEmpty {
            return true;
        }
    }
}

/// [`push_code_page`] into UTF-8 bytes: the same text, not checked as UTF-8 (it is by
/// construction); false, `out` untouched, when mdfkit has no decoder for code page `cp`.
pub fn push_code_page_utf8(cp: u16, bytes: &[u8], out: &mut Utf8Writer) -> bool {
    if let Some(table) = single_byte_table(cp) {
        SingleByteText(table).push_utf8(bytes, out);
        return true;
    }
    let Some(encoding) = encoding_of(cp) else { return false };
    // ASCII reads the same in every code page: copied without setting up a decoder.
    if bytes.is_ascii() {
        out.push_bytes(bytes);
        return true;
    }
    let mut decoder = encoding.new_decoder_without_bom_handling();
    let mut rest = bytes;
    loop {
        let room = decoder.max_utf8_buffer_length(rest.len()).unwrap_or(rest.len().saturating_mul(3));
        let (result, read, written, _) = decoder.decode_to_utf8(rest, out.spare(room.max(4)), true);
        out.commit(written);
        rest = rest.get(read..).unwrap_or_default();
        if result == encoding_rs::CoderResult::InputEmpty {
            return true;
        }
    }
}

/// The text of a single-byte code page mdfkit has a table for ([`TextCodec::single_byte`]).
#[derive(Clone, Copy)]
pub struct SingleByteText(&'static Utf8Table);

impl SingleByteText {
    /// Appends the UTF-8 of `bytes` to `out`, as [`TextCodec::decode_into_utf8`] spells them.
    #[inline]
    pub fn push_utf8(self, bytes: &[u8], out: &mut Utf8Writer) {
        let written = single_byte_to_utf8(self.0, bytes, out.spare(3 * bytes.len()));
        out.commit(written);
    }
}

/// The UTF-8 of every byte of a single-byte code page: up to three bytes (every character of
/// these code pages is in the Basic Multilingual Plane), then how many of them there are.
type Utf8Table = [[u8; 4]; 256];

/// The tables of the single-byte code pages decoded by our own tables.
fn single_byte_table(cp: u16) -> Option<&'static Utf8Table> {
    match cp {
        1252 => Some(&CP1252_UTF8),
        437 => Some(&CP437_UTF8),
        850 => Some(&CP850_UTF8),
        _ => None,
    }
}

/// Writes the UTF-8 of the single-byte code page text `src` to the front of `dst`, which must hold
/// three bytes a byte of `src`; returns the bytes written. Eight bytes are read at a time and
/// copied as they are: all ASCII (most text), they are its UTF-8; otherwise the ASCII bytes
/// before the first other one are (an accented letter is one in a word), that byte writes its
/// table entry's three bytes and moves on by its length, and the next eight are read from the
/// byte after it. The last bytes, fewer than eight, are read one by one (ASCII as it is).
fn single_byte_to_utf8(table: &Utf8Table, src: &[u8], dst: &mut [u8]) -> usize {
    const NOT_ASCII: u64 = 0x8080_8080_8080_8080;
    let (mut r, mut w) = (0, 0);
    while let Some(eight) = src.get(r..r + 8) {
        // `w` is at most three times `r`, and `dst` holds three bytes a byte: room for eight.
        dst[w..w + 8].copy_from_slice(eight);
        let high = u64::from_le_bytes(eight.try_into().unwrap_or([0xff; 8])) & NOT_ASCII;
        if high == 0 {
            (r, w) = (r + 8, w + 8);
            continue;
        }
        let ascii = (high.trailing_zeros() / 8) as usize;
        w += ascii + table_utf8(table, eight[ascii], &mut dst[w + ascii..]);
        r += ascii + 1;
    }
    for &byte in src.get(r..).unwrap_or_default() {
        if byte < 0x80 {
            dst[w] = byte;
            w += 1;
        } else {
            w += table_utf8(table, byte, &mut dst[w..]);
        }
    }
    w
}

/// Writes `byte`'s table entry (three bytes) to the front of `dst`; returns the UTF-8 length.
#[inline(always)]
fn table_utf8(table: &Utf8Table, byte: u8, dst: &mut [u8]) -> usize {
    let entry = &table[usize::from(byte)];
    dst[..3].copy_from_slice(&entry[..3]);
    usize::from(entry[3])
}

/// The [`Utf8Table`] of a code page that is ASCII below 0x80 and `high` from 0x80 on.
const fn utf8_table(high: &[char; 128]) -> Utf8Table {
    let mut table = [[0u8; 4]; 256];
    let mut byte = 0;
    while byte < 256 {
        let c = if byte < 128 { byte as u32 } else { high[byte - 128] as u32 };
        table[byte] = if c < 0x80 {
            [c as u8, 0, 0, 1]
        } else if c < 0x800 {
            [0xc0 | (c >> 6) as u8, 0x80 | (c & 0x3f) as u8, 0, 2]
        } else {
            [0xe0 | (c >> 12) as u8, 0x80 | (c >> 6 & 0x3f) as u8, 0x80 | (c & 0x3f) as u8, 3]
        };
        byte += 1;
    }
    table
}

/// Windows-1252 from 0x80: [`CP1252_HIGH`], then Latin-1.
const fn cp1252_high() -> [char; 128] {
    let mut high = ['\0'; 128];
    let mut i = 0;
    while i < 128 {
        high[i] = if i < 32 { CP1252_HIGH[i] } else { (0x80 + i as u8) as char };
        i += 1;
    }
    high
}

static CP1252_UTF8: Utf8Table = utf8_table(&cp1252_high());
static CP437_UTF8: Utf8Table = utf8_table(&CP437_HIGH);
static CP850_UTF8: Utf8Table = utf8_table(&CP850_HIGH);

/// The `encoding_rs` decoder of a Windows code page number. The WHATWG encodings it implements are
/// supersets of Windows' 932 (Shift_JIS), 936 (GBK), 949 (EUC-KR, i.e. Unified Hangul Code) and
/// 950 (Big5).
fn encoding_of(cp: u16) -> Option<&'static encoding_rs::Encoding> {
    use encoding_rs::*;
    Some(match cp {
        874 => WINDOWS_874,
        932 => SHIFT_JIS,
        936 => GBK,
        949 => EUC_KR,
        950 => BIG5,
        1250 => WINDOWS_1250,
        1251 => WINDOWS_1251,
        1253 => WINDOWS_1253,
        1254 => WINDOWS_1254,
        1255 => WINDOWS_1255,
        1256 => WINDOWS_1256,
        1257 => WINDOWS_1257,
        1258 => WINDOWS_1258,
        65001 => UTF_8,
        _ => return None,
    })
}

/// Windows-1252's characters for bytes 0x80..0x9F (the rest of the code page is Latin-1).
const CP1252_HIGH: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž', '\u{8f}', '\u{90}', '‘', '’',
    '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}', 'ž', 'Ÿ',
];

/// Code page 437 (OEM United States), bytes 0x80..0xFF.
const CP437_HIGH: [char; 128] = [
    '\u{00c7}', '\u{00fc}', '\u{00e9}', '\u{00e2}', '\u{00e4}', '\u{00e0}', '\u{00e5}', '\u{00e7}', '\u{00ea}',
    '\u{00eb}', '\u{00e8}', '\u{00ef}', '\u{00ee}', '\u{00ec}', '\u{00c4}', '\u{00c5}', '\u{00c9}', '\u{00e6}',
    '\u{00c6}', '\u{00f4}', '\u{00f6}', '\u{00f2}', '\u{00fb}', '\u{00f9}', '\u{00ff}', '\u{00d6}', '\u{00dc}',
    '\u{00a2}', '\u{00a3}', '\u{00a5}', '\u{20a7}', '\u{0192}', '\u{00e1}', '\u{00ed}', '\u{00f3}', '\u{00fa}',
    '\u{00f1}', '\u{00d1}', '\u{00aa}', '\u{00ba}', '\u{00bf}', '\u{2310}', '\u{00ac}', '\u{00bd}', '\u{00bc}',
    '\u{00a1}', '\u{00ab}', '\u{00bb}', '\u{2591}', '\u{2592}', '\u{2593}', '\u{2502}', '\u{2524}', '\u{2561}',
    '\u{2562}', '\u{2556}', '\u{2555}', '\u{2563}', '\u{2551}', '\u{2557}', '\u{255d}', '\u{255c}', '\u{255b}',
    '\u{2510}', '\u{2514}', '\u{2534}', '\u{252c}', '\u{251c}', '\u{2500}', '\u{253c}', '\u{255e}', '\u{255f}',
    '\u{255a}', '\u{2554}', '\u{2569}', '\u{2566}', '\u{2560}', '\u{2550}', '\u{256c}', '\u{2567}', '\u{2568}',
    '\u{2564}', '\u{2565}', '\u{2559}', '\u{2558}', '\u{2552}', '\u{2553}', '\u{256b}', '\u{256a}', '\u{2518}',
    '\u{250c}', '\u{2588}', '\u{2584}', '\u{258c}', '\u{2590}', '\u{2580}', '\u{03b1}', '\u{00df}', '\u{0393}',
    '\u{03c0}', '\u{03a3}', '\u{03c3}', '\u{00b5}', '\u{03c4}', '\u{03a6}', '\u{0398}', '\u{03a9}', '\u{03b4}',
    '\u{221e}', '\u{03c6}', '\u{03b5}', '\u{2229}', '\u{2261}', '\u{00b1}', '\u{2265}', '\u{2264}', '\u{2320}',
    '\u{2321}', '\u{00f7}', '\u{2248}', '\u{00b0}', '\u{2219}', '\u{00b7}', '\u{221a}', '\u{207f}', '\u{00b2}',
    '\u{25a0}', '\u{00a0}',
];

/// Code page 850 (OEM Multilingual Latin 1), bytes 0x80..0xFF.
const CP850_HIGH: [char; 128] = [
    '\u{00c7}', '\u{00fc}', '\u{00e9}', '\u{00e2}', '\u{00e4}', '\u{00e0}', '\u{00e5}', '\u{00e7}', '\u{00ea}',
    '\u{00eb}', '\u{00e8}', '\u{00ef}', '\u{00ee}', '\u{00ec}', '\u{00c4}', '\u{00c5}', '\u{00c9}', '\u{00e6}',
    '\u{00c6}', '\u{00f4}', '\u{00f6}', '\u{00f2}', '\u{00fb}', '\u{00f9}', '\u{00ff}', '\u{00d6}', '\u{00dc}',
    '\u{00f8}', '\u{00a3}', '\u{00d8}', '\u{00d7}', '\u{0192}', '\u{00e1}', '\u{00ed}', '\u{00f3}', '\u{00fa}',
    '\u{00f1}', '\u{00d1}', '\u{00aa}', '\u{00ba}', '\u{00bf}', '\u{00ae}', '\u{00ac}', '\u{00bd}', '\u{00bc}',
    '\u{00a1}', '\u{00ab}', '\u{00bb}', '\u{2591}', '\u{2592}', '\u{2593}', '\u{2502}', '\u{2524}', '\u{00c1}',
    '\u{00c2}', '\u{00c0}', '\u{00a9}', '\u{2563}', '\u{2551}', '\u{2557}', '\u{255d}', '\u{00a2}', '\u{00a5}',
    '\u{2510}', '\u{2514}', '\u{2534}', '\u{252c}', '\u{251c}', '\u{2500}', '\u{253c}', '\u{00e3}', '\u{00c3}',
    '\u{255a}', '\u{2554}', '\u{2569}', '\u{2566}', '\u{2560}', '\u{2550}', '\u{256c}', '\u{00a4}', '\u{00f0}',
    '\u{00d0}', '\u{00ca}', '\u{00cb}', '\u{00c8}', '\u{0131}', '\u{00cd}', '\u{00ce}', '\u{00cf}', '\u{2518}',
    '\u{250c}', '\u{2588}', '\u{2584}', '\u{00a6}', '\u{00cc}', '\u{2580}', '\u{00d3}', '\u{00df}', '\u{00d4}',
    '\u{00d2}', '\u{00f5}', '\u{00d5}', '\u{00b5}', '\u{00fe}', '\u{00de}', '\u{00da}', '\u{00db}', '\u{00d9}',
    '\u{00fd}', '\u{00dd}', '\u{00af}', '\u{00b4}', '\u{00ad}', '\u{00b1}', '\u{2017}', '\u{00be}', '\u{00b6}',
    '\u{00a7}', '\u{00f7}', '\u{00b8}', '\u{00b0}', '\u{00a8}', '\u{00b7}', '\u{00b9}', '\u{00b3}', '\u{00b2}',
    '\u{25a0}', '\u{00a0}',
];

/// Decodes Windows-1252 text (the code page of the Latin1_General collations).
pub fn decode_cp1252(b: &[u8]) -> String {
    let mut text = String::new();
    push_code_page(1252, b, &mut text);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte after an ASCII run is mapped as it is alone.
    #[test]
    fn cp1252_text_is_each_byte_mapped() {
        let bytes: Vec<u8> = (0..=255u8).chain(b"plain ascii".iter().copied()).chain([0x80, 0x41, 0x9f]).collect();
        for start in [0, 65, 128, 200, 256] {
            let each: String = bytes[start..].iter().map(|&x| decode_cp1252(&[x])).collect();
            assert_eq!(decode_cp1252(&bytes[start..]), each);
        }
        assert_eq!(decode_cp1252(&[0x80, 0xe9]), "\u{20ac}\u{e9}");
    }

    /// Case-insensitive exactly where SQL Server's own list names the collation `_CI` (3,955
    /// names: Windows and SQL collations, binary ones never).
    #[test]
    fn case_insensitive_collations_are_those_named_ci() {
        let all = all();
        assert!(all.len() > 3900);
        for (id, name) in &all {
            assert_eq!(ignores_case(*id), name.contains("_CI_") || name.ends_with("_CI"), "{id} {name}");
        }
        assert!(!ignores_case(0x0400_0000), "not listed: exact");
    }

    /// Ids and names as SQL Server 2017 reports them (`COLLATIONPROPERTY(name, 'CollationID')` over
    /// `sys.fn_helpcollations()`, the source of `data/collations.tsv`): one of each kind of id.
    const REPORTED: &[(i64, &str)] = &[
        (53256, "Latin1_General_CI_AS"),
        (4104, "Latin1_General_CI_AS_KS_WS"),
        (8, "Latin1_General_CS_AS_KS_WS"),
        (65560, "Albanian_BIN"),
        (2072, "Albanian_BIN2"),
        (53272, "Albanian_CI_AS"),
        (32792, "Albanian_CS_AS_KS"),
        (327704, "Albanian_100_BIN"),
        (264216, "Albanian_100_BIN2"),
        (323864, "Albanian_100_CI_AI_SC"),
        (262408, "Latin1_General_100_CS_AS_KS_WS_SC"),
        (184369, "Chinese_PRC_90_CI_AS"),
        (192830, "Chinese_Hong_Kong_Stroke_90_CI_AI_SC"),
        (133180, "Divehi_90_BIN2"),
        (455496, "Japanese_XJIS_140_CI_AI"),
        (454984, "Japanese_XJIS_140_CI_AI_VSS"),
        (458825, "Japanese_Bushu_Kakusu_140_BIN"),
        (395337, "Japanese_Bushu_Kakusu_140_BIN2"),
        (393545, "Japanese_Bushu_Kakusu_140_CS_AS_KS_WS_VSS"),
        (394057, "Japanese_Bushu_Kakusu_140_CS_AS_KS_WS"),
        (53284, "Chinese_PRC_CI_AS"),
        (53269, "Cyrillic_General_CI_AS"),
        (53288, "Modern_Spanish_CI_AS"),
        (61465, "Thai_CI_AI"),
        (53274, "Turkish_CI_AS"),
        (872468488, "SQL_Latin1_General_CP1_CI_AS"),
        (503318536, "SQL_Latin1_General_CP437_BIN2"),
        (671154184, "SQL_Latin1_General_CP850_BIN"),
        (-1224683515, "SQL_Danish_Pref_CP1_CI_AS"),
        (-2113875942, "SQL_Latin1_General_CP1254_CI_AS"),
    ];

    #[test]
    fn names_the_ids_sql_server_reports() {
        for &(id, expected) in REPORTED {
            assert_eq!(name(id as u32), expected, "id {id}");
        }
        assert_eq!(name(7 << 24), "collation id 117440512");
    }

    #[test]
    fn the_table_parses_whole() {
        let lines = TABLE.lines().filter(|l| !l.starts_with('#')).count();
        assert_eq!(table().designators.len() + table().sql.len(), lines);
    }

    /// SQL Server's list, enumerated: every collation resolves from its id to its own name, and
    /// to a code page mdfkit decodes, or is stated Unicode-only.
    #[test]
    fn every_listed_collation_resolves_to_a_code_page() {
        let list = all();
        // sys.fn_helpcollations() returns 3,955 rows on SQL Server 2017.
        assert_eq!(list.len(), 3955);
        let mut unicode_only = std::collections::BTreeSet::new();
        for (id, listed) in &list {
            let collation = lookup(*id).unwrap_or_else(|| panic!("{listed} ({id}) does not resolve"));
            assert_eq!(&collation.name, listed, "id {id}");
            match collation.code_page {
                CodePage::Ansi(cp) => {
                    assert!(push_code_page(cp, b"\xe9", &mut String::new()), "{listed}: code page {cp}")
                }
                CodePage::UnicodeOnly => {
                    unicode_only
                        .insert(listed.split("_9").next().and_then(|n| n.split("_1").next()).unwrap_or("").to_string());
                }
            }
        }
        let ids: std::collections::HashSet<u32> = list.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids.len(), list.len(), "ids are unique");
        // Microsoft, "Collation and Unicode support": the Unicode-only collations.
        let expected = [
            "Assamese",
            "Bengali",
            "Divehi",
            "Indic_General",
            "Khmer",
            "Lao",
            "Maltese",
            "Maori",
            "Nepali",
            "Pashto",
            "Syriac",
            "Tibetan",
        ];
        assert_eq!(unicode_only.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    }

    #[test]
    fn decodes_each_kind_of_code_page() {
        let cases: &[(&str, &[u8], &str)] = &[
            ("Latin1_General_CI_AS", b"('x')\x80\xe9", "('x')€é"),
            ("Cyrillic_General_CI_AS", b"\xcf\xf0\xe8\xe2\xe5\xf2", "Привет"),
            ("Chinese_PRC_CI_AS", b"\xc4\xe3\xba\xc3", "你好"),
            ("Japanese_CI_AS", b"\x82\xb1\x82\xf1", "こん"),
            ("Korean_Wansung_CI_AS", b"\xc7\xd1", "한"),
            ("Chinese_Taiwan_Stroke_CI_AS", b"\xa4\xa4", "中"),
            ("Thai_CI_AI", b"\xa1", "ก"),
            ("Turkish_CI_AS", b"\xfe", "ş"),
            ("Polish_CI_AS", b"\xb9", "ą"),
            ("Greek_CI_AS", b"\xe1", "α"),
            ("SQL_Latin1_General_CP437_BIN", b"\x81\xb0", "ü░"),
            ("SQL_Latin1_General_CP850_CI_AS", b"\x9b\xd5", "øı"),
        ];
        let list = all();
        for &(collation, bytes, expected) in cases {
            let id = list.iter().find(|(_, n)| n == collation).map(|(id, _)| *id).unwrap();
            assert_eq!(decode_text(id, bytes).unwrap(), expected, "{collation}");
            let mut utf8 = Utf8Writer::default();
            TextCodec::new(id).decode_into_utf8(bytes, &mut utf8).unwrap();
            assert_eq!(utf8.written(), expected.as_bytes(), "{collation}, as UTF-8 bytes");
        }
    }

    /// Each byte as the code page's character table maps it alone (the reference).
    fn mapped(cp: u16, bytes: &[u8]) -> String {
        let high = |b: u8| usize::from(b - 0x80);
        bytes
            .iter()
            .map(|&b| match (cp, b) {
                (_, 0..=0x7f) => char::from(b),
                (1252, 0x80..=0x9f) => CP1252_HIGH[high(b)],
                (1252, _) => char::from(b),
                (437, _) => CP437_HIGH[high(b)],
                _ => CP850_HIGH[high(b)],
            })
            .collect()
    }

    /// Every byte of each single-byte code page, alone, all 256 from every start, and in ASCII
    /// runs of every length mixed with other bytes (crossing the eight-byte words and the string
    /// path's 64-byte chunks), reads as the code page's table maps it, as a string and as bytes
    /// appended to a buffer that already holds text.
    #[test]
    fn single_byte_code_pages_read_each_byte_as_their_tables() {
        let every: Vec<u8> = (0..=255u8).collect();
        let mut state = 0x9e37_79b9_u32;
        let mut utf8 = Utf8Writer::default();
        for cp in [1252, 437, 850] {
            let mut cases: Vec<Vec<u8>> = every.iter().map(|&b| vec![b]).collect();
            cases.extend((0..256).map(|start| every[start..].to_vec()));
            for length in 0..300 {
                let mut bytes = Vec::new();
                while bytes.len() < length {
                    state ^= state << 13;
                    state ^= state >> 17;
                    state ^= state << 5;
                    let run = state as usize % 40;
                    bytes.extend(std::iter::repeat_n(b'a' + (state >> 8) as u8 % 26, run));
                    bytes.push(0x80 | (state >> 16) as u8);
                }
                cases.push(bytes);
            }
            for (case, bytes) in cases.iter().enumerate() {
                let expected = mapped(cp, bytes);
                let mut text = String::from("x");
                assert!(push_code_page(cp, bytes, &mut text));
                assert_eq!(text, format!("x{expected}"), "code page {cp}, case {case}");
                utf8.clear();
                utf8.push_bytes(&b"xyz"[..case % 4]);
                assert!(push_code_page_utf8(cp, bytes, &mut utf8));
                assert_eq!(
                    utf8.written(),
                    [&b"xyz"[..case % 4], expected.as_bytes()].concat(),
                    "code page {cp}, case {case}"
                );
            }
        }
    }

    /// Every arrangement of ASCII and other bytes over twelve places (the eight-byte words read
    /// from every offset, the last bytes one by one), as the code page's table maps it; the same
    /// through the table found once for a run ([`TextCodec::single_byte`]).
    #[test]
    fn single_byte_text_reads_every_arrangement_of_ascii_and_other_bytes() {
        // SQL_Latin1_General_CP1_CI_AS: code page 1252.
        let codec = TextCodec::new(872_468_488);
        let single_byte = codec.single_byte().expect("code page 1252 has a table");
        let mut utf8 = Utf8Writer::default();
        for others in 0..1u32 << 12 {
            let bytes: Vec<u8> = (0..12)
                .map(|at| if others >> at & 1 == 1 { [0xe9, 0x80, 0xff][at % 3] } else { b'a' + at as u8 })
                .collect();
            let expected = mapped(1252, &bytes);
            for len in [12, 9, 8, 7, 1] {
                let expected = mapped(1252, &bytes[..len]);
                utf8.clear();
                single_byte.push_utf8(&bytes[..len], &mut utf8);
                assert_eq!(utf8.written(), expected.as_bytes(), "{:x?}", &bytes[..len]);
            }
            utf8.clear();
            codec.decode_into_utf8(&bytes, &mut utf8).unwrap();
            assert_eq!(utf8.written(), expected.as_bytes());
        }
    }

    /// Backup headers of the corpus give the database collation in TDS form beside the boot page's
    /// id: (TDS info, sort id, boot page id).
    #[test]
    fn tds_forms_name_the_boot_page_collation() {
        let pairs: &[(u32, u8, u32)] = &[
            (0x00d0_0409, 52, 872468488),
            (0x00d0_0409, 0, 53256),
            (0x00d0_040c, 0, 53259),
            (0x0010_0409, 0, 4104),
            (0x00d0_0401, 0, 53249),
            (0x00d0_0415, 0, 53267),
            (0x00d0_0419, 0, 53269),
            (0x00d0_0c0a, 0, 53288),
            (0x00f0_041e, 0, 61465),
        ];
        for &(info, sort_id, id) in pairs {
            assert_eq!(id_from_tds(info, sort_id), Some(id), "{info:#x} {sort_id}");
        }
        // SQL Server 2017's own TDS form of Japanese_XJIS_140_BIN2 (TdsCollation 0x11040032).
        assert_eq!(id_from_tds(0x3200_0411, 0).map(name).as_deref(), Some("Japanese_XJIS_140_BIN2"));
        assert_eq!(id_from_tds(0x0400_0409, 0), None, "UTF-8 flag");
    }

    /// SQL Server 2019's `_UTF8` collations, enumerated from SQL Server's list by Microsoft's
    /// rule (`_UTF8` after each `_SC` name and each non-binary `_140` one, plus
    /// Latin1_General_100_BIN2_UTF8: 1,553 names), each named from its TDS form as [MS-TDS] composes it
    /// (LCID, flags case/accent/kana/width/binary/binary2/UTF-8, version). `_VSS` cannot be said in
    /// TDS: those 32 resolve to their twin without it. Their text is UTF-8.
    #[test]
    fn every_utf8_collation_resolves_from_its_tds_form() {
        let mut utf8 = 0;
        for (id, listed) in all().into_iter().filter(|(id, _)| id >> 24 == 0) {
            let version = (id >> VERSION_SHIFT) & VERSION_MASK;
            let binary2 = id & BINARY2 != 0;
            let supplementary = (version == 3 && id & (BINARY | BINARY2) == 0) || listed.ends_with("_SC");
            if !supplementary && listed != "Latin1_General_100_BIN2" {
                continue;
            }
            utf8 += 1;
            let flags = [IGNORE_CASE, IGNORE_ACCENT, IGNORE_KANA, IGNORE_WIDTH, BINARY, BINARY2]
                .iter()
                .enumerate()
                .filter(|(_, &bit)| id & bit != 0)
                .fold(1 << 6, |f, (i, _)| f | 1 << i);
            let info = lookup(id).unwrap().lcid | flags << 20 | version << 28;
            let expected = match listed.strip_suffix("_VSS") {
                Some(twin) => format!("{twin}_UTF8"),
                None => format!("{listed}_UTF8"),
            };
            assert_eq!(
                name_from_tds(info, 0).as_deref(),
                Some(expected.as_str()),
                "{listed} ({info:#x}), binary2 {binary2}"
            );
            // Without the flag, the same form names the collation itself (less `_SC`/`_VSS`).
            assert!(name_from_tds(info & !TDS_UTF8, 0).is_some(), "{listed}");
        }
        assert_eq!(utf8, 1553);
        assert_eq!(name_from_tds(0x2600_0409, 0).as_deref(), Some("Latin1_General_100_BIN2_UTF8"));
        assert_eq!(name_from_tds(0x2500_0409, 0), None, "no _BIN_UTF8");
        assert_eq!(name_from_tds(0x04d0_0409, 0), None, "Latin1_General (2000 names) has no _SC, so no _UTF8");
        assert_eq!(name_from_tds(0x04d0_0409, 52), None, "SQL collations have no _UTF8");
        let mut text = String::new();
        assert!(push_code_page(65001, "é€𝄞".as_bytes(), &mut text));
        assert_eq!(text, "é€𝄞");
    }

    #[test]
    fn refuses_text_it_cannot_decode_by_name() {
        let assamese = all().into_iter().find(|(_, n)| n == "Assamese_100_CI_AS").unwrap().0;
        assert_eq!(decode_text(assamese, b"plain").unwrap(), "plain");
        let e = decode_text(assamese, b"\xe9").unwrap_err().to_string();
        assert!(e.contains("Assamese_100_CI_AS") && e.contains("Unicode-only"), "{e}");
        let e = decode_text(0x400 | 8, b"\xe9").unwrap_err().to_string();
        assert!(e.contains("collation id 1032"), "{e}");
    }
    #[test]
    fn a_check_of_text_refuses_what_decoding_refuses_without_decoding() {
        let by_name = |name: &str| all().into_iter().find(|(_, n)| n == name).unwrap().0;
        let (assamese, latin) = (by_name("Assamese_100_CI_AS"), by_name("Latin1_General_CI_AS"));
        for id in [assamese, latin, 0x400 | 8] {
            let codec = TextCodec::new(id);
            for bytes in [&b"plain"[..], b"caf\xe9", b"\x81\xff"] {
                let decoded = codec.decode(bytes).map(|_| ()).map_err(|e| e.to_string());
                assert_eq!(codec.check(bytes).map_err(|e| e.to_string()), decoded, "collation {id}, {bytes:?}");
                let into_utf8 = codec.decode_into_utf8(bytes, &mut Utf8Writer::default()).map_err(|e| e.to_string());
                assert_eq!(into_utf8, decoded, "collation {id}, {bytes:?}, as UTF-8 bytes");
            }
        }
        assert!(TextCodec::new(latin).check(b"caf\xe9").is_ok(), "code page 1252 reads every byte");
        assert!(TextCodec::new(assamese).check(b"caf\xe9").is_err(), "a Unicode-only collation has no code page");
    }
}
