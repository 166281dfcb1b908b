//! Collation ids (`dbi_collation`, `syscolpars.collationid`) and their names.
//!
//! A collation id packs the SQL sort id in its top byte (0 for Windows collations), comparison
//! flags in bits 8-15 (0xD0 = case-, kana- and width-insensitive, accent-sensitive) and an index
//! into SQL Server's table of Windows collations in the low 12 bits (0x008 = Latin1_General).
//! Only ids seen in real files are named; any other id is shown as its number, never guessed.
//!
//! Sources: the ids below were read from the corpus boot pages and column rows, and agree with
//! `COLLATIONPROPERTY(name, 'CollationID')` values published for those collations. All three use
//! code page 1252.

const KNOWN: &[(u32, &str)] = &[
    (0x3400_D008, "SQL_Latin1_General_CP1_CI_AS"),
    (0x0000_D008, "Latin1_General_CI_AS"),
    // entrepot.bak: its backup header spells the database collation in TDS form as LCID 0x040C
    // (French), flags 0xD0, sort id 0.
    (0x0000_D00B, "French_CI_AS"),
];

/// The collation's name, or `collation id N` when the id is not one mdfkit has seen.
pub fn name(id: u32) -> String {
    KNOWN.iter().find(|(k, _)| *k == id).map_or_else(|| format!("collation id {id}"), |(_, n)| n.to_string())
}

/// Decodes char/varchar bytes stored under collation `id`. Known collations use their code page;
/// for any other, plain ASCII is still certain, anything else is refused rather than guessed.
pub fn decode_text(id: u32, bytes: &[u8]) -> crate::Result<String> {
    let mut text = String::new();
    decode_text_into(id, bytes, &mut text)?;
    Ok(text)
}

/// Like [`decode_text`], appending to `out` (no allocation per value).
pub fn decode_text_into(id: u32, bytes: &[u8], out: &mut String) -> crate::Result<()> {
    if KNOWN.iter().any(|(k, _)| *k == id) || bytes.is_ascii() {
        push_cp1252(bytes, out);
        return Ok(());
    }
    Err(crate::Error::unsupported(format!("text in collation id {id}, whose code page mdfkit does not know yet")))
}

/// Windows-1252's characters for bytes 0x80..0x9F (the rest of the code page is Latin-1).
const CP1252_HIGH: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž', '\u{8f}', '\u{90}', '‘', '’',
    '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}', 'ž', 'Ÿ',
];

/// Decodes Windows-1252 text (the code page of the Latin1_General collations).
pub fn decode_cp1252(b: &[u8]) -> String {
    let mut text = String::new();
    push_cp1252(b, &mut text);
    text
}

/// Appends Windows-1252 text to `out`.
pub fn push_cp1252(b: &[u8], out: &mut String) {
    out.reserve(b.len());
    for &x in b {
        out.push(if (0x80..0xa0).contains(&x) { CP1252_HIGH[usize::from(x - 0x80)] } else { char::from(x) });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn decodes_cp1252() {
        assert_eq!(super::decode_cp1252(b"('x')\x80\xe9"), "('x')€é");
    }

    #[test]
    fn names_known_ids_and_numbers_the_rest() {
        assert_eq!(super::name(872_468_488), "SQL_Latin1_General_CP1_CI_AS");
        assert_eq!(super::name(53_256), "Latin1_General_CI_AS");
        assert_eq!(super::name(7), "collation id 7");
    }
}
