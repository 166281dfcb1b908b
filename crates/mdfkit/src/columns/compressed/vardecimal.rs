//! vardecimal: decimal / numeric values in ROW and PAGE compressed records, and in the vardecimal
//! storage format of SQL Server 2005 SP2 (FixedVar records whose decimal columns are stored as
//! variable-length columns).
//!
//! ```text
//!  +---------------------+-----------------------------------------------+
//!  | sign (bit 7) and    | mantissa: 10-bit groups, most significant bit |
//!  | exponent + 64 (0-6) | first, each three decimal digits (000-999)    |
//!  +---------------------+-----------------------------------------------+
//!  0                     1 .. at most 20 bytes in all
//! ```
//!
//! Sign bit set: positive. The exponent is the power of ten of the mantissa's first digit, biased
//! by 64. The groups' digits, read in order, are the mantissa with its decimal point after the
//! first digit: with `k` groups read as one integer `M`, the value is
//! `M * 10^(exponent - 3k + 1)`. Zero bits missing from the last byte are not stored (a group
//! whose last bits fall past the end reads them as 0), nor is zero itself (no bytes).
//!
//! Sources: Mark S. Rasmussen, "The Anatomy of Vardecimals" (improve.dk, 2011: `C2 1E DC 20` is
//! 123.45 in a decimal(5,2)); Sunil Agarwal, "Data row before and after vardecimal storage
//! format" (Microsoft SQL Server Storage Engine blog, 2007: DBCC PAGE shows `C0 19` for 1.00 in a
//! decimal(38,2)); OrcaMDF's `SqlDecimal.cs`, whose reading of the sign (no complement for
//! negative values) passed its tests against SQL Server with -4892384.382090 and -1 (no bytes of
//! a negative value are at hand).

use crate::error::{Error, Result};

const EXPONENT_BIAS: i32 = 64;
/// Sign byte and 19 bytes of groups: 38 digits need 13 groups (130 bits, 17 bytes) at most.
const MAX_LEN: usize = 20;
/// 10-bit groups in the 19 bytes after the sign byte.
const MAX_GROUPS: usize = ((MAX_LEN - 1) * 8).div_ceil(10);

/// The value of a vardecimal as an integer count of `10^-scale`, checked against `precision`.
pub fn unscaled(bytes: &[u8], precision: u8, scale: u8) -> Result<i128> {
    if bytes.len() <= SHORT_BYTES {
        let word = bytes.iter().fold(0u64, |w, &b| w << 8 | u64::from(b));
        return unscaled_word(word, bytes.len(), precision, scale);
    }
    let Some((&head, groups)) = bytes.split_first() else { return Ok(0) };
    if bytes.len() > MAX_LEN {
        return Err(malformed(bytes.len(), format!("longer than {MAX_LEN} bytes")));
    }
    let mantissa = long_mantissa(groups).map_err(|g| bad_mantissa(bytes.len(), g))?;
    scaled(head, mantissa, bytes.len(), precision, scale)
}

/// Bytes of a vardecimal that [`unscaled_word`] reads from one 64-bit word: the sign and
/// exponent byte and 6 groups (18 digits), most values.
pub const SHORT_BYTES: usize = 1 + SHORT_LEN;

/// [`unscaled`] of a vardecimal of `len` (0 to [`SHORT_BYTES`]) bytes whose big endian reading is
/// `word`: the column-at-a-time path joins an anchor prefix and a suffix into one word this way.
#[inline(always)]
pub fn unscaled_word(word: u64, len: usize, precision: u8, scale: u8) -> Result<i128> {
    if len == 0 {
        return Ok(0);
    }
    debug_assert!(len <= SHORT_BYTES);
    let head = (word >> (8 * (len - 1))) as u8;
    // The groups' bytes at the top of the word (none for a lone head byte).
    let groups = if len == 1 { 0 } else { word << (64 - 8 * (len - 1)) };
    // Trailing zero digits kept: the power of ten then is often negative, and one division
    // drops them all (a loop over them costs a mispredicted branch a value).
    let (mantissa, digit_count) = short_groups(groups, len - 1).map_err(|g| bad_mantissa(len, g))?;
    let power = exponent_of(head) - digit_count + 1 + i32::from(scale);
    // At most 18 digits times at most 10^19: a 64 by 64-bit product, no overflow. Other powers
    // (more decimals than the scale, huge exponents) take the general way.
    let magnitude = match power {
        // 10^19 < 2^64: the product of two 64-bit numbers.
        0..=19 => u128::from(mantissa) * (POWERS_OF_TEN[power as usize] as u64 as u128),
        -19..=-1 => {
            let divisor = POWERS_OF_TEN[power.unsigned_abs() as usize] as u64;
            if mantissa % divisor != 0 {
                return scaled(head, short_stripped(mantissa, digit_count), len, precision, scale);
            }
            u128::from(mantissa / divisor)
        }
        _ => return scaled(head, short_stripped(mantissa, digit_count), len, precision, scale),
    };
    if magnitude >= POWERS_OF_TEN[usize::from(precision.min(38))] {
        return Err(malformed(len, format!("more digits than precision {precision}")));
    }
    // Below 10^38 < 2^127: fits.
    Ok(if head & 0x80 != 0 { magnitude as i128 } else { -(magnitude as i128) })
}

/// The exponent of a vardecimal's first byte (its bits 0-6, biased).
#[inline]
fn exponent_of(head: u8) -> i32 {
    i32::from(head & 0x7f) - EXPONENT_BIAS
}

/// The value of a vardecimal of `len` bytes whose first byte is `head` and whose mantissa is
/// `(mantissa, digit_count)`, checked against `precision` and `scale`.
fn scaled(head: u8, (mantissa, digit_count): (u128, i32), len: usize, precision: u8, scale: u8) -> Result<i128> {
    let bad = |what: String| malformed(len, what);
    let positive = head & 0x80 != 0;
    let exponent = exponent_of(head);
    let power = exponent - digit_count + 1 + i32::from(scale);
    let magnitude = if mantissa == 0 {
        0
    } else if power >= 0 {
        POWERS_OF_TEN
            .get(power as usize)
            .and_then(|p| mantissa.checked_mul(*p))
            .ok_or_else(|| bad(format!("exponent {exponent} is out of range")))?
    } else {
        let divisor = POWERS_OF_TEN.get(power.unsigned_abs() as usize).copied().unwrap_or(u128::MAX);
        if !mantissa.is_multiple_of(divisor) {
            return Err(bad(format!("more decimals than the column's scale {scale}")));
        }
        mantissa / divisor
    };
    if magnitude >= POWERS_OF_TEN[usize::from(precision.min(38))] {
        return Err(bad(format!("more digits than precision {precision}")));
    }
    // Below 10^38 < 2^127: fits.
    let value = magnitude as i128;
    Ok(if positive { value } else { -value })
}

#[cold]
fn malformed(len: usize, what: String) -> Error {
    Error::corrupt(format!("vardecimal of {len} bytes: {what}"))
}

#[cold]
fn bad_mantissa(len: usize, group: Option<u16>) -> Error {
    match group {
        Some(g) => malformed(len, format!("a 10-bit group holds {g}, more than three digits")),
        None => malformed(len, "more digits than a decimal holds".into()),
    }
}

/// Mantissa bytes that [`short_groups`] reads in one 64-bit word: 6 groups, 18 digits.
const SHORT_LEN: usize = 7;

/// The mantissa of the 10-bit `groups` (their digits read as one integer, trailing zero digits
/// dropped but by [`short_groups`]) and its digit count; `Err(Some(g))` for a group over 999, `Err(None)` for more
/// digits than a u128 holds.
type Mantissa<T> = std::result::Result<(T, i32), Option<u16>>;

/// The mantissa of at most [`SHORT_LEN`] bytes of groups, given at the top of the word `groups`
/// (the bits after them 0), as [`long_mantissa`] reads it but with its trailing zero digits kept
/// ([`short_stripped`] drops them): the groups' digits as one integer and their count (three a
/// group).
#[inline(always)]
fn short_groups(groups: u64, bytes: usize) -> Mantissa<u64> {
    let count = (bytes * 8).div_ceil(10);
    let mut mantissa = 0u64;
    for g in 0..count {
        let group = (groups >> (54 - 10 * g)) & 0x3ff;
        if group > 999 {
            return Err(Some(group as u16));
        }
        mantissa = mantissa * 1000 + group;
    }
    Ok((mantissa, 3 * count as i32))
}

/// `mantissa` of `digit_count` digits with its trailing zero digits dropped, as [`scaled`] takes
/// it (zero: no digits).
#[cold]
fn short_stripped(mut mantissa: u64, mut digit_count: i32) -> (u128, i32) {
    if mantissa == 0 {
        return (0, 0);
    }
    while mantissa.is_multiple_of(10) {
        mantissa /= 10;
        digit_count -= 1;
    }
    (u128::from(mantissa), digit_count)
}

/// The mantissa of any number of `groups` bytes (see [`Mantissa`]).
fn long_mantissa(groups: &[u8]) -> Mantissa<u128> {
    let group_count = (groups.len() * 8).div_ceil(10);
    // No allocation per value: at most 16 groups in 19 bytes.
    let mut all = [0u16; MAX_GROUPS];
    for (g, slot) in all.iter_mut().enumerate().take(group_count) {
        *slot = group(groups, g);
    }
    let mut digits = &all[..group_count];
    if let Some(&g) = digits.iter().find(|g| **g > 999) {
        return Err(Some(g));
    }
    // Trailing zero digits change nothing but the power of ten; dropping them keeps M within
    // 38 digits (38 nines take 13 groups, 39 digits with the last group's zero).
    while let [rest @ .., 0] = digits {
        digits = rest;
    }
    let mut digit_count = 3 * digits.len() as i32;
    let mut mantissa: u128 = 0;
    for (i, &g) in digits.iter().enumerate() {
        let (mut g, mut width) = (g, 1000u128);
        if i + 1 == digits.len() {
            while g % 10 == 0 && g > 0 {
                g /= 10;
                width /= 10;
                digit_count -= 1;
            }
        }
        mantissa = mantissa.checked_mul(width).and_then(|m| m.checked_add(u128::from(g))).ok_or(None)?;
    }
    Ok((mantissa, digit_count))
}

/// 10^0 to 10^38: every power a decimal's digits can need (10^39 overflows u128).
const POWERS_OF_TEN: [u128; 39] = {
    let mut powers = [1u128; 39];
    let mut i = 1;
    while i < powers.len() {
        powers[i] = powers[i - 1] * 10;
        i += 1;
    }
    powers
};

/// The `g`-th 10-bit group of the mantissa bytes, most significant bit first; bits past the end
/// read as 0.
fn group(bytes: &[u8], g: usize) -> u16 {
    // The group's 10 bits lie within the three bytes from the one holding its first bit.
    let (first, skip) = ((g * 10) / 8, (g * 10) % 8);
    let byte = |k: usize| u32::from(bytes.get(first + k).copied().unwrap_or(0));
    let window = byte(0) << 16 | byte(1) << 8 | byte(2);
    ((window >> (14 - skip)) & 0x3ff) as u16
}

/// Appends a vardecimal in the decimal storage form (a sign byte, 1 positive, then the magnitude
/// little endian in `storage_len - 1` bytes) to `out`.
pub fn to_decimal_storage(bytes: &[u8], precision: u8, scale: u8, storage_len: usize, out: &mut Vec<u8>) -> Result<()> {
    let value = unscaled(bytes, precision, scale)?;
    out.push(u8::from(value >= 0));
    let magnitude = value.unsigned_abs().to_le_bytes();
    let len = storage_len.saturating_sub(1).min(magnitude.len());
    out.extend_from_slice(&magnitude[..len]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::scaled_text;

    fn text(bytes: &[u8], precision: u8, scale: u8) -> String {
        scaled_text(unscaled(bytes, precision, scale).unwrap(), scale)
    }

    /// Packs three-digit groups as SQL Server does, for values with more groups than any
    /// published sample: the layout the two real samples below pin down.
    fn pack(head: u8, groups: &[u16]) -> Vec<u8> {
        let mut bits: Vec<bool> = groups.iter().flat_map(|g| (0..10).rev().map(move |b| g >> b & 1 == 1)).collect();
        while !bits.len().is_multiple_of(8) {
            bits.push(false);
        }
        let mut out = vec![head];
        out.extend(bits.chunks(8).map(|c| c.iter().fold(0u8, |acc, b| acc << 1 | u8::from(*b))));
        while out.len() > 1 && out.last() == Some(&0) {
            out.pop();
        }
        out
    }

    #[test]
    fn reads_the_published_samples() {
        // improve.dk, "The Anatomy of Vardecimals": 123.45 in a decimal(5,2).
        assert_eq!(text(&[0xC2, 0x1E, 0xDC, 0x20], 5, 2), "123.45");
        // Storage Engine blog, DBCC PAGE of t_simple.c2 decimal(38,2): 1.00.
        assert_eq!(text(&[0xC0, 0x19], 38, 2), "1.00");
        // Zero is not stored.
        assert_eq!(text(&[], 18, 4), "0.0000");
    }

    #[test]
    fn reads_every_precision_and_scale() {
        // 10^38 - 1, the largest decimal(38,0): 38 nines, groups 999 x 12 then 990, exponent 37.
        let mut groups = vec![999u16; 12];
        groups.push(990);
        assert_eq!(text(&pack(0x80 | (64 + 37), &groups), 38, 0), "9".repeat(38));
        // The same digits as decimal(38,38): 0.999..., exponent -1.
        assert_eq!(text(&pack(0x80 | (64 - 1), &groups), 38, 38), format!("0.{}", "9".repeat(38)));
        // -0.001 in a decimal(10,3): exponent -3, one group 100, sign bit clear.
        assert_eq!(text(&pack(64 - 3, &[100]), 10, 3), "-0.001");
        // 12.3 in OrcaMDF's decimal(18,4) column A: exponent 1, group 123.
        assert_eq!(text(&pack(0x80 | 65, &[123]), 18, 4), "12.3000");
        for precision in 1..=38u8 {
            for scale in 0..=precision {
                // 1 at every scale: exponent 0, group 100.
                let one = 10i128.pow(u32::from(scale));
                if precision > scale {
                    assert_eq!(unscaled(&[0xC0, 0x19], precision, scale).unwrap(), one);
                } else {
                    assert!(unscaled(&[0xC0, 0x19], precision, scale).is_err(), "1 does not fit ({precision},{scale})");
                }
            }
        }
    }

    /// The next number of a xorshift generator whose state is `x`.
    fn next(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn the_one_word_mantissa_equals_the_general_one() {
        // Every length up to SHORT_LEN, bytes from a simple generator (groups over 999 included).
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let x = next(&mut x);
            let bytes = x.to_be_bytes();
            let len = (x % (SHORT_LEN as u64 + 1)) as usize;
            let top = if len == 0 { 0 } else { x >> (64 - 8 * len) << (64 - 8 * len) };
            let short = short_groups(top, len).map(|(m, digits)| short_stripped(m, digits));
            assert_eq!(short, long_mantissa(&bytes[..len]), "{:02x?}", &bytes[..len]);
        }
    }

    #[test]
    fn the_one_word_value_equals_the_general_one() {
        // unscaled_word (64-bit products) against the u128 way every length takes, for every
        // length up to SHORT_BYTES, exponents around each scale, groups over 999 included.
        let general = |bytes: &[u8], precision, scale| {
            let Some((&head, groups)) = bytes.split_first() else { return Ok(0) };
            let mantissa = long_mantissa(groups).map_err(|g| bad_mantissa(bytes.len(), g))?;
            scaled(head, mantissa, bytes.len(), precision, scale)
        };
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let x = next(&mut x);
            let mut bytes = x.to_be_bytes();
            // Exponents from -8 to 23, either sign.
            bytes[0] = (bytes[0] & 0x80) | (56 + (bytes[0] & 0x1f));
            let len = (x % (SHORT_BYTES as u64 + 1)) as usize;
            let (precision, scale) = ((x >> 20) as u8 % 38 + 1, (x >> 28) as u8 % 10);
            let scale = scale.min(precision);
            let (fast, slow) = (unscaled(&bytes[..len], precision, scale), general(&bytes[..len], precision, scale));
            assert_eq!(fast.as_ref().ok(), slow.as_ref().ok(), "{:02x?} ({precision},{scale})", &bytes[..len]);
            assert_eq!(fast.map_err(|e| e.to_string()).err(), slow.map_err(|e| e.to_string()).err());
        }
    }

    #[test]
    fn writes_the_decimal_storage_form() {
        let mut out = Vec::new();
        to_decimal_storage(&[0xC2, 0x1E, 0xDC, 0x20], 5, 2, 5, &mut out).unwrap();
        assert_eq!(out, [1, 0x39, 0x30, 0, 0], "12345 hundredths");
    }

    #[test]
    fn malformed_vardecimals_are_corrupt() {
        assert!(unscaled(&[0xC2, 0xFF, 0xC0], 5, 2).is_err(), "a group of 1023");
        assert!(unscaled(&[0xC2, 0x1E, 0xDC, 0x20], 5, 1).is_err(), "123.45 has two decimals");
        assert!(unscaled(&[0xC2, 0x1E, 0xDC, 0x20], 4, 2).is_err(), "123.45 needs precision 5");
        assert!(unscaled(&[0xFF, 0x19], 38, 0).is_err(), "10^63");
        assert!(unscaled(&[0xC0; 21], 38, 0).is_err(), "too long");
    }
}
