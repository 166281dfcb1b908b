//! The forge's own value model: what each generated cell is, its storage bytes, and the text
//! SQL Server (and mdfkit) spells it as.
//!
//! Storage forms follow the reader's `decode.rs` table (little endian integers, decimal as a sign
//! byte and magnitude, datetime as 1/300 s ticks and days since 1900, date/time/datetime2/
//! datetimeoffset as units and days since 0001-01-01, uniqueidentifier with its first three groups
//! little endian). The spellings are written here independently of the reader, from SQL Server's
//! documented output formats, so a round trip compares two implementations.

use crate::spec::{ColType, ColumnSpec, Gen, Nulls};

/// One generated value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Int(i64),
    Bit(bool),
    /// Unscaled: decimal/numeric at the column's scale, money and smallmoney in 1/10000.
    Scaled(i128),
    Real(f32),
    Float(f64),
    /// Days since 0001-01-01.
    Date(i64),
    /// Units of 10^-scale seconds since midnight.
    Time(u64),
    DateTime2 {
        days: i64,
        units: u64,
    },
    /// UTC date and time, and the offset in minutes.
    DateTimeOffset {
        days: i64,
        units: u64,
        offset: i16,
    },
    /// Days since 1900-01-01 and 1/300 s ticks.
    DateTime {
        days: i32,
        ticks: u32,
    },
    SmallDateTime {
        days: u16,
        minutes: u16,
    },
    Text(String),
    Bytes(Vec<u8>),
    Guid([u8; 16]),
}

/// SplitMix64: a tiny, fast, well-mixed deterministic generator.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi as i128 - lo as i128 + 1) as u128;
        if span > u64::MAX as u128 {
            return self.next_u64() as i64;
        }
        (lo as i128 + self.below(span as u64) as i128) as i64
    }

    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Mixes several words into one seed.
pub fn mix(parts: &[u64]) -> u64 {
    let mut r = Rng::new(0x6d64_666b_6974);
    let mut h = 0u64;
    for &p in parts {
        r.0 ^= p;
        h ^= r.next_u64();
        r.0 = h;
    }
    h
}

/// A string's hash, for seeds.
pub fn name_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

const WORDS: &[&str] = &[
    "alpha",
    "bravo",
    "café",
    "delta",
    "écho",
    "fox",
    "golf",
    "hôtel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "x-ray",
    "yankee",
    "zulu",
    "Grüße",
    "naïve",
    "smörgåsbord",
    "piñata",
];
/// Extra characters for nchar/nvarchar: outside Windows-1252.
const WIDE: &[&str] = &["Ωmega", "日本語", "Привет", "λx", "€uro", "Ελλάδα", "한국어", "עברית"];

/// Generates the value of `column` in row `row` of table `table_seed` (`None` = NULL). Pure: the
/// same arguments always give the same value.
pub fn generate(column: &ColumnSpec, table_seed: u64, column_index: usize, row: u64) -> Option<Val> {
    let mut rng = Rng::new(mix(&[table_seed, column_index as u64, row]));
    match column.nulls {
        Nulls::Never => {}
        Nulls::Always => return None,
        Nulls::Every(n) => {
            if n > 0 && row.is_multiple_of(n) {
                return None;
            }
        }
        Nulls::Random(p) => {
            if rng.unit() < p {
                return None;
            }
        }
    }
    Some(value_of(column.ty, &column.gen, row, &mut rng))
}

fn value_of(ty: ColType, gen: &Gen, row: u64, rng: &mut Rng) -> Val {
    use ColType::*;
    let int = |rng: &mut Rng, lo: i64, hi: i64| match gen {
        Gen::Sequence { start, step } => start.wrapping_add(step.wrapping_mul(row as i64)).clamp(lo, hi),
        Gen::Range { lo: a, hi: b } => rng.range_i64((*a).max(lo), (*b).min(hi).max((*a).max(lo))),
        _ => rng.range_i64(lo, hi),
    };
    match ty {
        TinyInt => Val::Int(int(rng, 0, 255)),
        SmallInt => Val::Int(int(rng, i16::MIN.into(), i16::MAX.into())),
        Int => Val::Int(int(rng, i32::MIN.into(), i32::MAX.into())),
        BigInt => Val::Int(int(rng, i64::MIN, i64::MAX)),
        Bit => Val::Bit(int(rng, 0, 1) == 1),
        Decimal(p, _) | Numeric(p, _) => {
            let max = 10i128.pow(u32::from(p)) - 1;
            match gen {
                Gen::Sequence { .. } | Gen::Range { .. } => {
                    Val::Scaled(i128::from(int(rng, i64::MIN, i64::MAX)).clamp(-max, max))
                }
                _ => {
                    // Spread over every magnitude: a random number of digits, then digits.
                    let digits = 1 + rng.below(u64::from(p)) as u32;
                    let m = 10i128.pow(digits);
                    let v = ((u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64())) % m as u128) as i128;
                    Val::Scaled(if rng.below(2) == 0 { v } else { -v })
                }
            }
        }
        Money => Val::Scaled(i128::from(int(rng, i64::MIN, i64::MAX))),
        SmallMoney => Val::Scaled(i128::from(int(rng, i32::MIN.into(), i32::MAX.into()))),
        Real => Val::Real(match gen {
            Gen::Sequence { .. } | Gen::Range { .. } => int(rng, -(1 << 24), 1 << 24) as f32 / 4.0,
            _ => (rng.unit() * 2.0 - 1.0) as f32 * 10f32.powi(rng.range_i64(-6, 12) as i32),
        }),
        Float => Val::Float(match gen {
            Gen::Sequence { .. } | Gen::Range { .. } => int(rng, -(1 << 52), 1 << 52) as f64 / 8.0,
            _ => (rng.unit() * 2.0 - 1.0) * 10f64.powi(rng.range_i64(-30, 30) as i32),
        }),
        Date => Val::Date(rng.range_i64(0, 3_652_058)),
        Time(s) => Val::Time(rng.below(86_400 * 10u64.pow(u32::from(s)))),
        DateTime2(s) => {
            // `Range`: days since 0001-01-01 within lo..=hi (Arrow's nanosecond timestamps hold
            // only the years 1677 to 2262).
            let days = match gen {
                Gen::Range { lo, hi } => {
                    rng.range_i64((*lo).clamp(0, 3_652_058), (*hi).clamp((*lo).clamp(0, 3_652_058), 3_652_058))
                }
                _ => rng.range_i64(0, 3_652_058),
            };
            Val::DateTime2 { days, units: rng.below(86_400 * 10u64.pow(u32::from(s))) }
        }
        DateTimeOffset(s) => Val::DateTimeOffset {
            // A day of margin at both ends: the local time shown must stay within 0001..9999.
            days: rng.range_i64(1, 3_652_057),
            units: rng.below(86_400 * 10u64.pow(u32::from(s))),
            offset: rng.range_i64(-840, 840) as i16,
        },
        DateTime => {
            Val::DateTime { days: rng.range_i64(-53_690, 2_958_463) as i32, ticks: rng.below(25_920_000) as u32 }
        }
        SmallDateTime => Val::SmallDateTime { days: rng.below(65_535) as u16, minutes: rng.below(1440) as u16 },
        UniqueIdentifier => {
            let mut g = [0u8; 16];
            g[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
            g[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
            Val::Guid(g)
        }
        Binary(n) => {
            let mut b = random_bytes(rng, n as usize);
            b.resize(n as usize, 0);
            Val::Bytes(b)
        }
        VarBinary(n) => {
            let len = length(gen, rng, n.map_or(100, usize::from)).min(n.map_or(usize::MAX, usize::from));
            Val::Bytes(random_bytes(rng, len))
        }
        Char(n) => {
            let mut s = truncate(text(gen, rng, n as usize, false), Some(n), false);
            let pad = (n as usize).saturating_sub(s.chars().count());
            s.extend(std::iter::repeat_n(' ', pad));
            Val::Text(s)
        }
        NChar(n) => {
            let mut s = truncate(text(gen, rng, n as usize, true), Some(n), true);
            let pad = (n as usize).saturating_sub(s.encode_utf16().count());
            s.extend(std::iter::repeat_n(' ', pad));
            Val::Text(s)
        }
        VarChar(n) => Val::Text(truncate(text(gen, rng, n.map_or(100, usize::from), false), n, false)),
        NVarChar(n) => Val::Text(truncate(text(gen, rng, n.map_or(100, usize::from), true), n, true)),
    }
}

/// Cuts `s` to the declared length (characters, or UTF-16 units for wide text).
fn truncate(s: String, declared: Option<u16>, wide: bool) -> String {
    let Some(limit) = declared.map(usize::from) else { return s };
    let mut n = 0;
    s.chars()
        .take_while(|c| {
            n += if wide { c.len_utf16() } else { 1 };
            n <= limit
        })
        .collect()
}

fn length(gen: &Gen, rng: &mut Rng, cap: usize) -> usize {
    match gen {
        Gen::Length { min, max } => min + rng.below((max.saturating_sub(*min) + 1) as u64) as usize,
        _ => rng.below(cap as u64 + 1) as usize,
    }
}

fn random_bytes(rng: &mut Rng, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Text of `length(gen)` characters (UTF-16 units for wide text) made of words; `cap` is the
/// declared length. Narrow text stays within Windows-1252.
fn text(gen: &Gen, rng: &mut Rng, cap: usize, wide: bool) -> String {
    if let Gen::Choice(options) = gen {
        if !options.is_empty() {
            return options[rng.below(options.len() as u64) as usize].clone();
        }
    }
    let target = length(gen, rng, cap).min(if matches!(gen, Gen::Length { .. }) { usize::MAX } else { cap });
    let mut s = String::with_capacity(target + 16);
    let mut n = 0;
    // Long values repeat a generated block: LOB-sized values cost little to make.
    let mut block: Option<(String, usize)> = None;
    while n < target {
        if n > 4096 && block.is_none() {
            block = Some((s.clone(), n));
        }
        if let Some((b, bn)) = &block {
            if n + bn <= target {
                s.push_str(b);
                n += bn;
                continue;
            }
        }
        let word = if wide && rng.below(3) == 0 {
            WIDE[rng.below(WIDE.len() as u64) as usize]
        } else {
            WORDS[rng.below(WORDS.len() as u64) as usize]
        };
        for piece in [word, " "] {
            for ch in piece.chars() {
                let w = if wide { ch.len_utf16() } else { 1 };
                if n + w > target {
                    continue;
                }
                s.push(ch);
                n += w;
            }
        }
    }
    s
}

/// A decimal of `unscaled / 10^scale` in the vardecimal encoding: a byte of sign (0x80: positive)
/// and exponent + 64 (the power of ten of the first digit), then the significant digits in
/// groups of three, 10 bits each, most significant bit first, trailing zero bytes left out; zero
/// is no bytes. Written from Mark S. Rasmussen's "The Anatomy of Vardecimals" (improve.dk, 2011:
/// 123.45 is C2 1E DC 20) and the Storage Engine blog's DBCC PAGE dump (1.00 is C0 19).
pub fn encode_vardecimal(unscaled: i128, scale: u8, out: &mut Vec<u8>) {
    if unscaled == 0 {
        return;
    }
    let all_digits = unscaled.unsigned_abs().to_string();
    let exponent = all_digits.len() as i32 - 1 - i32::from(scale);
    let mut digits = all_digits.trim_end_matches('0').to_string();
    while !digits.len().is_multiple_of(3) {
        digits.push('0');
    }
    let sign = if unscaled > 0 { 0x80 } else { 0 };
    out.push(sign | (exponent + 64) as u8);
    let mut bits: Vec<bool> = Vec::new();
    for group in digits.as_bytes().chunks(3) {
        let g: u16 = std::str::from_utf8(group).unwrap_or("0").parse().unwrap_or(0);
        bits.extend((0..10).rev().map(|b| g >> b & 1 == 1));
    }
    let start = out.len();
    out.extend(
        bits.chunks(8).map(|byte| byte.iter().enumerate().fold(0u8, |acc, (i, b)| acc | u8::from(*b) << (7 - i))),
    );
    while out.len() > start && out.last() == Some(&0) {
        out.pop();
    }
}

/// Days from 0001-01-01 to 1900-01-01.
const DAYS_0001_TO_1900: i64 = 693_595;

impl Val {
    /// The value's storage bytes in a column of type `ty`.
    pub fn encode(&self, ty: ColType, out: &mut Vec<u8>) {
        use ColType::*;
        match (self, ty) {
            (Val::Int(v), TinyInt) => out.push(*v as u8),
            (Val::Int(v), SmallInt) => out.extend_from_slice(&(*v as i16).to_le_bytes()),
            (Val::Int(v), Int) => out.extend_from_slice(&(*v as i32).to_le_bytes()),
            (Val::Int(v), BigInt) => out.extend_from_slice(&v.to_le_bytes()),
            (Val::Bit(b), Bit) => out.push(u8::from(*b)),
            (Val::Scaled(v), Decimal(p, _) | Numeric(p, _)) => {
                out.push(u8::from(*v >= 0));
                let len = ty.fixed_len().unwrap_or(17) - 1;
                let _ = p;
                out.extend_from_slice(&v.unsigned_abs().to_le_bytes()[..len]);
            }
            (Val::Scaled(v), Money) => out.extend_from_slice(&(*v as i64).to_le_bytes()),
            (Val::Scaled(v), SmallMoney) => out.extend_from_slice(&(*v as i32).to_le_bytes()),
            (Val::Real(v), Real) => out.extend_from_slice(&v.to_le_bytes()),
            (Val::Float(v), Float) => out.extend_from_slice(&v.to_le_bytes()),
            (Val::Date(d), Date) => out.extend_from_slice(&(*d as u32).to_le_bytes()[..3]),
            (Val::Time(u), Time(_)) => out.extend_from_slice(&u.to_le_bytes()[..ty.fixed_len().unwrap_or(5)]),
            (Val::DateTime2 { days, units }, DateTime2(_)) => {
                let t = ty.fixed_len().unwrap_or(8) - 3;
                out.extend_from_slice(&units.to_le_bytes()[..t]);
                out.extend_from_slice(&(*days as u32).to_le_bytes()[..3]);
            }
            (Val::DateTimeOffset { days, units, offset }, DateTimeOffset(_)) => {
                let t = ty.fixed_len().unwrap_or(10) - 5;
                out.extend_from_slice(&units.to_le_bytes()[..t]);
                out.extend_from_slice(&(*days as u32).to_le_bytes()[..3]);
                out.extend_from_slice(&offset.to_le_bytes());
            }
            (Val::DateTime { days, ticks }, DateTime) => {
                out.extend_from_slice(&ticks.to_le_bytes());
                out.extend_from_slice(&days.to_le_bytes());
            }
            (Val::SmallDateTime { days, minutes }, SmallDateTime) => {
                out.extend_from_slice(&minutes.to_le_bytes());
                out.extend_from_slice(&days.to_le_bytes());
            }
            (Val::Guid(g), UniqueIdentifier) => out.extend_from_slice(g),
            (Val::Bytes(b), Binary(_) | VarBinary(_)) => out.extend_from_slice(b),
            (Val::Text(s), Char(_) | VarChar(_)) => out.extend(s.chars().map(cp1252_byte)),
            (Val::Text(s), NChar(_) | NVarChar(_)) => out.extend(s.encode_utf16().flat_map(u16::to_le_bytes)),
            (v, t) => panic!("value {v:?} does not fit a {} column", t.spelling()),
        }
    }

    /// The text SQL Server prints for the value in a column of type `ty` (the spelling mdfkit's
    /// `cat`, CSV and JSON use).
    pub fn sql_text(&self, ty: ColType) -> String {
        use ColType::*;
        match (self, ty) {
            (Val::Int(v), _) => v.to_string(),
            (Val::Bit(b), _) => u8::from(*b).to_string(),
            (Val::Scaled(v), Decimal(_, s) | Numeric(_, s)) => scaled(*v, s),
            (Val::Scaled(v), _) => scaled(*v, 4),
            (Val::Real(v), _) => v.to_string(),
            (Val::Float(v), _) => v.to_string(),
            (Val::Date(d), _) => ymd(*d),
            (Val::Time(u), Time(s)) => hms(*u, s),
            (Val::DateTime2 { days, units }, DateTime2(s)) => format!("{} {}", ymd(*days), hms(*units, s)),
            (Val::DateTimeOffset { days, units, offset }, DateTimeOffset(s)) => {
                let per_day = 86_400 * 10i128.pow(u32::from(s));
                let local = i128::from(*days) * per_day
                    + i128::from(*units)
                    + i128::from(*offset) * 60 * 10i128.pow(u32::from(s));
                let sign = if *offset < 0 { '-' } else { '+' };
                let o = offset.unsigned_abs();
                format!(
                    "{} {} {sign}{:02}:{:02}",
                    ymd(local.div_euclid(per_day) as i64),
                    hms(local.rem_euclid(per_day) as u64, s),
                    o / 60,
                    o % 60
                )
            }
            (Val::DateTime { days, ticks }, _) => {
                // SQL Server rounds 1/300 s ticks to .000, .003 or .007.
                let ms = (u64::from(*ticks) * 10 + 1) / 3;
                format!("{} {}.{:03}", ymd(i64::from(*days) + DAYS_0001_TO_1900), hms(ms / 1000, 0), ms % 1000)
            }
            (Val::SmallDateTime { days, minutes }, _) => {
                format!("{} {:02}:{:02}:00", ymd(i64::from(*days) + DAYS_0001_TO_1900), minutes / 60, minutes % 60)
            }
            (Val::Guid(b), _) => format!(
                "{:02X}{:02X}{:02X}{:02X}-{:02X}{:02X}-{:02X}{:02X}-{}-{}",
                b[3],
                b[2],
                b[1],
                b[0],
                b[5],
                b[4],
                b[7],
                b[6],
                hex(&b[8..10]),
                hex(&b[10..16])
            ),
            (Val::Bytes(b), _) => format!("0x{}", hex(b)),
            (Val::Text(s), _) => s.clone(),
            (v, t) => panic!("value {v:?} does not fit a {} column", t.spelling()),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02X}")).collect()
}

fn scaled(v: i128, scale: u8) -> String {
    let digits = v.unsigned_abs().to_string();
    let sign = if v < 0 { "-" } else { "" };
    let scale = scale as usize;
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let digits = format!("{digits:0>w$}", w = scale + 1);
    let (i, f) = digits.split_at(digits.len() - scale);
    format!("{sign}{i}.{f}")
}

/// `YYYY-MM-DD` of days since 0001-01-01 (proleptic Gregorian), counted year by year.
pub fn ymd(days: i64) -> String {
    let mut y = 1i64;
    let mut d = days;
    // 400-year cycles have 146,097 days.
    y += 400 * (d / 146_097);
    d %= 146_097;
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    loop {
        let len = if leap(y) { 366 } else { 365 };
        if d < len {
            break;
        }
        d -= len;
        y += 1;
    }
    let months = [31, if leap(y) { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut m = 0;
    while d >= months[m] {
        d -= months[m];
        m += 1;
    }
    format!("{y:04}-{:02}-{:02}", m + 1, d + 1)
}

fn hms(units: u64, scale: u8) -> String {
    let per = 10u64.pow(u32::from(scale));
    let (secs, frac) = (units / per, units % per);
    let t = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if scale == 0 {
        t
    } else {
        format!("{t}.{frac:0w$}", w = scale as usize)
    }
}

/// Windows-1252 byte of a character the generator uses (Latin-1 letters map to themselves).
fn cp1252_byte(c: char) -> u8 {
    match c {
        '€' => 0x80,
        c if (c as u32) < 0x100 => c as u32 as u8,
        _ => b'?',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spells_dates_like_sql_server() {
        assert_eq!(ymd(0), "0001-01-01");
        assert_eq!(ymd(734_576), "2012-03-15");
        assert_eq!(ymd(3_652_058), "9999-12-31");
        assert_eq!(ymd(DAYS_0001_TO_1900), "1900-01-01");
        assert_eq!(Val::DateTime { days: 0, ticks: 2 }.sql_text(ColType::DateTime), "1900-01-01 00:00:00.007");
        assert_eq!(scaled(-5, 3), "-0.005");
        let g = [0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff];
        assert_eq!(Val::Guid(g).sql_text(ColType::UniqueIdentifier), "00112233-4455-6677-8899-AABBCCDDEEFF");
    }

    #[test]
    fn writes_the_published_vardecimals() {
        let encoded = |v: i128, scale: u8| {
            let mut out = Vec::new();
            encode_vardecimal(v, scale, &mut out);
            out
        };
        assert_eq!(encoded(12345, 2), [0xC2, 0x1E, 0xDC, 0x20], "improve.dk: 123.45");
        assert_eq!(encoded(100, 2), [0xC0, 0x19], "Storage Engine blog: 1.00");
        assert!(encoded(0, 4).is_empty());
    }

    #[test]
    fn text_respects_declared_lengths() {
        let mut rng = Rng::new(1);
        for _ in 0..200 {
            let s = text(&Gen::Random, &mut rng, 10, true);
            assert!(s.encode_utf16().count() <= 10);
            let s = text(&Gen::Length { min: 9000, max: 9000 }, &mut rng, 0, false);
            assert_eq!(s.chars().count(), 9000);
        }
    }
}
