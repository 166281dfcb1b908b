//! Unicode compression of nchar / nvarchar values in ROW and PAGE compressed records (SQL Server
//! 2008 R2 on): the Standard Compression Scheme for Unicode (SCSU).
//!
//! A value is either SCSU or, where SCSU would not save space, plain UTF-16LE. SQL Server tells
//! them apart by length: UTF-16LE is always an even number of bytes, and an SCSU value of even
//! length gets one more byte (`0x10`, SC0: select window 0, which changes nothing at the end), so
//! every SCSU value is odd. nvarchar(max) and ntext are never Unicode compressed.
//!
//! ```text
//!  single-byte mode (the start)              Unicode mode (after SCU)
//!  00 09 0A 0D 20-7F  the character          E0-E7 UCn    select window n, back to single-byte
//!  80-FF   active window's base + (b - 80)    E8-EF UDn x  define window n (x), select, back
//!  01-08 SQn b   quote: b < 80 static n + b,  F0 UQU hi lo quote one UTF-16 unit
//!                else window n + (b - 80)     F1 UDX hi lo define an extended window, back
//!  0B SDX hi lo  window hi>>5 := 10000 +      F2           reserved
//!                ((hi & 1F) << 8 | lo) * 80   other hi lo  one UTF-16 unit, big endian
//!  0E SQU hi lo  quote one UTF-16 unit
//!  0F SCU        enter Unicode mode           window offsets x: 01-67 x*80, 68-A7 x*80+AC00,
//!  10-17 SCn     select window n              F9-FF 00C0 0250 0370 0530 3040 30A0 FF60,
//!  18-1F SDn x   define window n (x), select  00 and A8-F8 reserved
//! ```
//!
//! Static windows 0-7 start at 0000, 0080, 0100, 0300, 2000, 2080, 2100, 3000; dynamic windows
//! start at 0080, 00C0, 0400, 0600, 0900, 3040, 30A0, FF00, window 0 selected.
//!
//! Sources: Unicode Technical Standard #6 (SCSU), sections 5-8 and its samples (section 9, kept as
//! tests by OrcaMDF's `ScsuExpanderTests`); Mark S. Rasmussen, "OrcaMDF Row Compression Support"
//! (improve.dk, 2012: SQL Server's Unicode compression is SCSU); the Business Central records
//! (`fragments/bc-compressed-records`: every SCSU value odd, `GENJNL` stored as `GENJNL` + `10`);
//! the value `43 00 0f 1d 80 02 8f 02` quoted in rsleedbx/mssqlbak-tests
//! `docs/spec/04_ROWSTORE_COMPRESSED.md` (a StackOverflow user name): even, so UTF-16LE, "Cᴏʀʏ";
//! that page's SCSU reading of it gives a NUL and unrelated letters. A lone last byte in Unicode
//! mode is SQL Server's padding to an odd length, also from that page.

use crate::error::{Error, Result};

const STATIC_WINDOWS: [u32; 8] = [0x0000, 0x0080, 0x0100, 0x0300, 0x2000, 0x2080, 0x2100, 0x3000];
const INITIAL_DYNAMIC_WINDOWS: [u32; 8] = [0x0080, 0x00C0, 0x0400, 0x0600, 0x0900, 0x3040, 0x30A0, 0xFF00];

/// Appends a compressed nchar / nvarchar value to `out` as UTF-16LE: SCSU when its length is odd,
/// else the value itself (UTF-16LE already).
pub fn unicode_value(bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
    if bytes.len().is_multiple_of(2) {
        out.extend_from_slice(bytes);
        return Ok(());
    }
    expand(bytes, out)
}

/// Expands an SCSU stream into UTF-16LE appended to `out`.
pub fn expand(bytes: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let bad =
        |what: &str, at: usize| Error::corrupt(format!("SCSU text of {} bytes: {what} at byte {at}", bytes.len()));
    let mut windows = INITIAL_DYNAMIC_WINDOWS;
    let mut active = 0usize;
    let mut unicode_mode = false;
    let mut i = 0;
    let operand = |i: usize| bytes.get(i).copied().ok_or_else(|| bad("an operand runs past the end", i));
    while i < bytes.len() {
        let b = bytes[i];
        if unicode_mode {
            match b {
                0xE0..=0xE7 => {
                    active = usize::from(b - 0xE0);
                    unicode_mode = false;
                    i += 1;
                }
                0xE8..=0xEF => {
                    let n = usize::from(b - 0xE8);
                    windows[n] =
                        window_offset(operand(i + 1)?).ok_or_else(|| bad("a reserved window offset", i + 1))?;
                    active = n;
                    unicode_mode = false;
                    i += 2;
                }
                0xF0 => {
                    push_unit(out, u16::from_be_bytes([operand(i + 1)?, operand(i + 2)?]));
                    i += 3;
                }
                0xF1 => {
                    let (n, offset) = extended_window(operand(i + 1)?, operand(i + 2)?);
                    windows[n] = offset;
                    active = n;
                    unicode_mode = false;
                    i += 3;
                }
                0xF2 => return Err(bad("the reserved tag F2", i)),
                // SQL Server's padding byte after text that ends in Unicode mode.
                _ if i + 1 == bytes.len() => i += 1,
                _ => {
                    push_unit(out, u16::from_be_bytes([b, bytes[i + 1]]));
                    i += 2;
                }
            }
            continue;
        }
        match b {
            0x00 | 0x09 | 0x0A | 0x0D | 0x20..=0x7F => {
                push_unit(out, u16::from(b));
                i += 1;
            }
            0x80..=0xFF => {
                push_code_point(out, windows[active] + u32::from(b - 0x80));
                i += 1;
            }
            0x01..=0x08 => {
                let n = usize::from(b - 0x01);
                let c = operand(i + 1)?;
                let code_point =
                    if c < 0x80 { STATIC_WINDOWS[n] + u32::from(c) } else { windows[n] + u32::from(c - 0x80) };
                push_code_point(out, code_point);
                i += 2;
            }
            0x0B => {
                let (n, offset) = extended_window(operand(i + 1)?, operand(i + 2)?);
                windows[n] = offset;
                active = n;
                i += 3;
            }
            0x0C => return Err(bad("the reserved tag 0C", i)),
            0x0E => {
                push_unit(out, u16::from_be_bytes([operand(i + 1)?, operand(i + 2)?]));
                i += 3;
            }
            0x0F => {
                unicode_mode = true;
                i += 1;
            }
            0x10..=0x17 => {
                active = usize::from(b - 0x10);
                i += 1;
            }
            0x18..=0x1F => {
                let n = usize::from(b - 0x18);
                windows[n] = window_offset(operand(i + 1)?).ok_or_else(|| bad("a reserved window offset", i + 1))?;
                active = n;
                i += 2;
            }
        }
    }
    Ok(())
}

/// The start of the dynamic window an SDn / UDn offset byte names; `None` for reserved bytes.
fn window_offset(x: u8) -> Option<u32> {
    Some(match x {
        0x01..=0x67 => u32::from(x) * 0x80,
        0x68..=0xA7 => u32::from(x) * 0x80 + 0xAC00,
        0xF9 => 0x00C0,
        0xFA => 0x0250,
        0xFB => 0x0370,
        0xFC => 0x0530,
        0xFD => 0x3040,
        0xFE => 0x30A0,
        0xFF => 0xFF60,
        _ => return None,
    })
}

/// SDX / UDX: the window number (top 3 bits) and its start above U+FFFF.
fn extended_window(hi: u8, lo: u8) -> (usize, u32) {
    let n = usize::from(hi >> 5);
    (n, 0x10000 + ((u32::from(hi & 0x1F) << 8 | u32::from(lo)) << 7))
}

fn push_unit(out: &mut Vec<u8>, unit: u16) {
    out.extend_from_slice(&unit.to_le_bytes());
}

fn push_code_point(out: &mut Vec<u8>, code_point: u32) {
    match char::from_u32(code_point) {
        Some(c) => {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                push_unit(out, *unit);
            }
        }
        // Windows can reach the surrogate block; a lone surrogate reads as U+FFFD later.
        None => push_unit(out, code_point as u16),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::cd::tests::hex;

    fn text(stored: &str) -> String {
        let mut out = Vec::new();
        unicode_value(&hex(stored), &mut out).unwrap();
        crate::bytes::utf16le(&out)
    }

    #[test]
    fn expands_the_samples_of_unicode_technical_standard_6() {
        // UTS #6 section 9 samples, as kept by OrcaMDF's ScsuExpanderTests.
        assert_eq!(text("61"), "a");
        assert_eq!(text(""), "");
        assert_eq!(text("313233"), "123");
        assert_eq!(text("12E8E8E8 E8E8E8E8 E8E8E8"), "ѨѨѨѨѨѨѨѨѨѨ");
        assert_eq!(
            text("416E2065 78616D70 6C652073 656E7465 6E636520 776F756C 64207368 6F772077 68617420 74686973 20776F72 64206D65 616E73"),
            "An example sentence would show what this word means"
        );
        assert_eq!(text("08DE15A7 82CC08DE A782CC"), "～であれ～であれ");
        assert_eq!(text("15A7A7A7 41414141 4141A7A7 41A758"), "でででAAAAAAででAでX");
    }

    #[test]
    fn sql_server_pads_even_scsu_to_an_odd_length() {
        // OrcaMDF's ScsuExpanderTests, values read from SQL Server: 20 spaces, and 1234567890.
        assert_eq!(text("20202020 20202020 20202020 20202020 20202020 10"), " ".repeat(20));
        assert_eq!(text("31323334 35363738 393010"), "1234567890");
        // Business Central's "General Journal" source code, stored as GENJNL + SC0.
        assert_eq!(text("47454e4a4e4c10"), "GENJNL");
    }

    #[test]
    fn even_values_are_plain_utf16() {
        // mssqlbak-tests' StackOverflow user: not shorter in SCSU, so stored as UTF-16LE.
        assert_eq!(text("43000f1d80028f02"), "Cᴏʀʏ");
    }

    #[test]
    fn unicode_mode_extended_windows_and_padding() {
        // SCU, then U+4E2D U+6587 as big-endian units (5 bytes: odd without padding).
        assert_eq!(text("0F 4E2D 6587"), "中文");
        // 'A', SCU, U+4E2D: 4 bytes, so SQL Server adds a byte, alone at the end in Unicode mode.
        assert_eq!(text("41 0F 4E2D 10"), "A中");
        // SDX: window 0 at 0x10000 + 0x1EC * 0x80 = U+1F600, whose first character is byte 0x80.
        assert_eq!(text("0B 01EC 80 10"), "😀");
    }

    #[test]
    fn malformed_scsu_is_corrupt() {
        for bad in ["0C 41 42", "18", "0E 41", "18 00 80", "0F F2 00 00"] {
            let mut out = Vec::new();
            let bytes = hex(bad);
            assert!(expand(&bytes, &mut out).is_err(), "{bad}");
        }
    }
}
