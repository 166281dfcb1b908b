//! The `xml` data type: SQL Server's binary XML ([MS-BINXML]) decoded to XML text.
//!
//! SQL Server stores an `xml` value (and sends it over TDS) as a token stream. It starts with
//! a header, then tokens of one byte each, most followed by operands:
//!
//! | bytes             | meaning                                                                 |
//! |-------------------|-------------------------------------------------------------------------|
//! | `DF FF`           | signature                                                               |
//! | `vv`              | format version: 1, or 2 (2 adds the SQL Server 2008 date/time tokens)   |
//! | `B0 04`           | code page of the text, little endian: always 1200 (UTF-16LE)            |
//!
//! Operand encodings:
//!
//! * **mb32**: an unsigned integer in base 128, least significant group first; a byte with its
//!   high bit set is followed by another. At most 5 bytes; the fifth carries bits 28-31, and a
//!   fifth byte above 7 is an error (the value does not fit 31 bits). **mb64** (lengths of binary
//!   and char data) has the same form; the .NET reader, like this one, refuses values over 31 bits.
//! * **text**: an mb32 count of UTF-16 code units, then that many units (2 bytes each, LE).
//! * **name ref**: an mb32 index into the name table (index 0 is the empty string; `F0` tokens
//!   append entries from 1 on). **qname ref**: an mb32 index into the qname table (entries from 1).
//!
//! Tokens:
//!
//! | token | name     | operands                                       | text produced                      |
//! |-------|----------|------------------------------------------------|------------------------------------|
//! | `FE`  | XmlDecl  | text version, [`FD` text encoding], standalone byte (0 none, 1 yes, 2 no) | `<?xml ...?>` |
//! | `FC`  | DocType  | text name, [`FB` text system], [`FA` text public], [`F9` text subset] | `<!DOCTYPE ...>` |
//! | `F8`  | Element  | qname ref; then optional attributes, content   | start tag                          |
//! | `F6`  | Attr     | qname ref, then the value tokens               | ` name="value"`                    |
//! | `F5`  | EndAttrs | none: ends the attribute list                  | `>`                                |
//! | `F7`  | EndElem  | none (directly after the start tag: empty element) | `</name>` or ` />`             |
//! | `F4`  | PI       | name ref (target), text (data)                 | `<?target data?>`                  |
//! | `F3`  | Comment  | text                                           | `<!--text-->`                      |
//! | `F2`  | CData    | text; repeated `F2` continue it, `F1` ends it  | `<![CDATA[...]]>`                  |
//! | `F0`  | Name     | text: appended to the name table               | none                               |
//! | `EF`  | QName    | name refs: namespace URI, prefix, local name   | none (appended to the qname table) |
//! | `ED`  | XmlText  | text: raw XML markup                           | the text, unchanged                |
//! | `EC`  | Nest     | a nested document: header, own tables          | its content                        |
//! | `EB`  | EndNest  | none: restores the outer document's tables     | none                               |
//! | `EA`  | Extn     | mb32 byte count, then that many bytes          | none (skipped)                     |
//! | `E9`  | NmFlush  | none: empties the name and qname tables        | none                               |
//!
//! A qname whose local name is entry 0 is a namespace declaration: its prefix is `xmlns` or
//! `xmlns:p`, and the attribute's value is the namespace URI. Such a qname with prefix and URI
//! both 0 is also written by SQL Server and means nothing.
//!
//! Value tokens (text content and attribute values; the token, then the value):
//!
//! | token | type                  | operand                                 | decoded here to          |
//! |-------|-----------------------|-----------------------------------------|--------------------------|
//! | `11`, `0E`, `18` | nvarchar, nchar, ntext | text                      | the text                 |
//! | `10`, `0D`, `16` | varchar, char, text    | mb64 byte count: code page (4 bytes LE), then bytes | the text (code pages 1252, 65001, 1200, or ASCII) |
//! | `06`, `07` | bit, tinyint     | 1 byte, unsigned                        | decimal                  |
//! | `88`  | xsd:byte              | 1 byte, signed                          | decimal                  |
//! | `01`, `89` | smallint, xsd:unsignedShort | 2 bytes                      | decimal                  |
//! | `02`, `8A` | int, xsd:unsignedInt | 4 bytes                              | decimal                  |
//! | `08`, `8B` | bigint, xsd:unsignedLong | 8 bytes                          | decimal                  |
//! | `86`  | xsd:boolean           | 1 byte                                  | `true` / `false`         |
//! | `03`, `04` | real, float      | 4 / 8 bytes IEEE 754                    | shortest round-trip form |
//! | `09`  | uniqueidentifier      | 16 bytes                                | canonical upper case     |
//! | `0F`, `0C`, `17`, `1B`, `85` | varbinary, binary, image, UDT, xsd:base64Binary | mb64 count, bytes | base64 |
//! | `84`  | xsd:hexBinary         | mb64 count, bytes                       | upper-case hex           |
//! | `8C`  | xsd:QName             | qname ref                               | `prefix:local`           |
//! | `05`, `14` | money, smallmoney | 8 / 4 bytes, units of 1/10000         | two to four decimals     |
//! | `0A`, `0B`, `87` | decimal, numeric, xsd:decimal | mb64 count (7, 11, 15 or 19), precision, scale, sign (1 positive, 0 negative), 1-4 LE 32-bit words of magnitude | decimal; xsd:decimal without trailing zeros |
//! | `12`, `13`, `81`-`83`, `7A`-`7F` | datetime, smalldatetime, xsd and SQL 2008 date/time types | fixed / scale-dependent | not decoded (unsupported) |
//!
//! Sources. The token values, header, mb32 and text encodings, the qname table (including the
//! namespace-declaration form), the operands of every token and the sizes of the value tokens
//! are taken from the .NET reader of this format, `XmlSqlBinaryReader`
//! (dotnet/corefx `src/System.Private.Xml/src/System/Xml/BinaryXml/XmlBinaryReader.cs` and
//! `BinXmlToken.cs`), which implements [MS-BINXML]; the names `XSD-BOOLEAN`, `SQL-TINYINT`, ...
//! appear in [MS-SSAS] 2.1.5, which refers to [MS-BINXML] for the encoding. The section numbers
//! of [MS-BINXML] itself could not be consulted (only its title page was reachable), so none are
//! cited here. The text produced follows the SQL Server documentation "Define the serialization
//! of XML data": `&`, `<`, `>` are always escaped; `"` in attribute values; TAB and LF in
//! attribute values and CR everywhere become character references; the last character of a
//! whitespace-only text node is written as a character reference. Characters outside the BMP
//! are written as themselves (the server writes them as references only when it casts to a
//! string itself). Checked against the corpus: AdventureWorksLT's `ProductModel.CatalogDescription`
//! decodes to exactly the text of the expected-value file.
//!
//! Input is untrusted: every length is checked, element and nested-document depth is limited to
//! [`MAX_DEPTH`], and the output to [`output_limit`] bytes.

use crate::error::{Error, Result};
use crate::value::{guid_text, scaled_text};

/// Deepest nesting of elements (plus nested documents) accepted. SQL Server itself refuses
/// documents nested deeper than 128 levels.
pub const MAX_DEPTH: usize = 1024;

/// The most text one value may decode to: 64 times its size plus 1 MiB, and never more than
/// the 2 GiB an `xml` value may hold.
pub fn output_limit(input_len: usize) -> usize {
    input_len.saturating_mul(64).saturating_add(1 << 20).min(i32::MAX as usize)
}

const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";
const XMLNS_NS: &str = "http://www.w3.org/2000/xmlns/";

mod tok {
    pub const XMLDECL: u8 = 0xFE;
    pub const ENCODING: u8 = 0xFD;
    pub const DOCTYPE: u8 = 0xFC;
    pub const SYSTEM: u8 = 0xFB;
    pub const PUBLIC: u8 = 0xFA;
    pub const SUBSET: u8 = 0xF9;
    pub const ELEMENT: u8 = 0xF8;
    pub const END_ELEM: u8 = 0xF7;
    pub const ATTR: u8 = 0xF6;
    pub const END_ATTRS: u8 = 0xF5;
    pub const PI: u8 = 0xF4;
    pub const COMMENT: u8 = 0xF3;
    pub const CDATA: u8 = 0xF2;
    pub const END_CDATA: u8 = 0xF1;
    pub const NAME: u8 = 0xF0;
    pub const QNAME: u8 = 0xEF;
    pub const XML_TEXT: u8 = 0xED;
    pub const NEST: u8 = 0xEC;
    pub const END_NEST: u8 = 0xEB;
    pub const EXTN: u8 = 0xEA;
    pub const NM_FLUSH: u8 = 0xE9;
}

/// Decodes one stored `xml` value to the XML text SQL Server prints for it.
pub fn decode_xml(bytes: &[u8]) -> Result<String> {
    let mut d = Decoder {
        b: bytes,
        pos: 0,
        out: String::new(),
        limit: output_limit(bytes.len()),
        tables: Tables::default(),
        outer: Vec::new(),
        elements: Vec::new(),
        scope: Vec::new(),
        text: String::new(),
        pending: None,
    };
    d.header()?;
    d.document()?;
    Ok(d.out)
}

/// One qname: indexes into the name table.
#[derive(Clone, Copy)]
struct QName {
    ns: usize,
    prefix: usize,
    local: usize,
}

#[derive(Default)]
struct Tables {
    /// Entry 0 is the empty string, implicitly.
    names: Vec<String>,
    /// Entry 0 is invalid, implicitly.
    qnames: Vec<QName>,
}

impl Tables {
    fn name(&self, i: usize) -> &str {
        if i == 0 {
            ""
        } else {
            &self.names[i - 1]
        }
    }
}

/// A resolved qname: the strings, and the name as written.
struct Name {
    prefix: String,
    ns: String,
    /// A namespace declaration (`xmlns` or `xmlns:p`).
    is_decl: bool,
    written: String,
}

struct OpenElement {
    written: String,
    /// Length of `Decoder::scope` before this element's declarations.
    scope_len: usize,
}

struct Decoder<'a> {
    b: &'a [u8],
    pos: usize,
    out: String,
    limit: usize,
    tables: Tables,
    /// Tables of the enclosing documents while inside `Nest`.
    outer: Vec<Tables>,
    elements: Vec<OpenElement>,
    /// In-scope namespace bindings (prefix, URI), innermost last.
    scope: Vec<(String, String)>,
    /// Character data of the current text node, not yet escaped.
    text: String,
    /// A token read ahead (token byte, its offset).
    pending: Option<(u8, usize)>,
}

impl Decoder<'_> {
    fn corrupt(&self, at: usize, what: impl std::fmt::Display) -> Error {
        Error::corrupt(format!("xml value: {what} at offset {at}"))
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self.b.get(self.pos).ok_or_else(|| self.corrupt(self.pos, "value ends early"))?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let at = self.pos;
        let end = at.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or_else(|| self.corrupt(at, format!("{n} bytes needed, {} left", self.b.len() - at)))?;
        self.pos = end;
        Ok(&self.b[at..end])
    }

    fn mb32(&mut self) -> Result<usize> {
        let at = self.pos;
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.byte()?;
            if i == 4 {
                if b > 7 {
                    return Err(self.corrupt(at, "multi-byte integer longer than 31 bits"));
                }
                value |= u32::from(b) << 28;
                break;
            }
            value |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                break;
            }
        }
        Ok(value as usize)
    }

    fn text(&mut self) -> Result<String> {
        let units = self.mb32()?;
        let bytes = self.take(units.saturating_mul(2))?;
        Ok(crate::bytes::utf16le(bytes))
    }

    fn emit(&mut self, s: &str) -> Result<()> {
        self.room(s.len())?;
        self.out.push_str(s);
        Ok(())
    }

    fn header(&mut self) -> Result<()> {
        let at = self.pos;
        if self.b.get(at..at + 2) != Some(&[0xDF, 0xFF]) {
            return Err(self.corrupt(at, "no binary XML signature DF FF"));
        }
        self.pos += 2;
        let at = self.pos;
        let version = self.byte()?;
        if version != 1 && version != 2 {
            return Err(Error::unsupported(format!("binary XML version {version} at offset {at}")));
        }
        let at = self.pos;
        let code_page = u16::from_le_bytes([self.byte()?, self.byte()?]);
        if code_page != 1200 {
            return Err(Error::unsupported(format!("binary XML in code page {code_page} at offset {at}")));
        }
        if self.b.get(self.pos) == Some(&tok::XMLDECL) {
            self.pos += 1;
            let version = self.text()?;
            let mut decl = format!("<?xml version=\"{}\"", escape_attr(&version));
            if self.b.get(self.pos) == Some(&tok::ENCODING) {
                self.pos += 1;
                let encoding = self.text()?;
                decl += &format!(" encoding=\"{}\"", escape_attr(&encoding));
            }
            let at = self.pos;
            match self.byte()? {
                0 => {}
                1 => decl += " standalone=\"yes\"",
                2 => decl += " standalone=\"no\"",
                other => return Err(self.corrupt(at, format!("standalone flag {other}"))),
            }
            decl += "?>";
            self.emit(&decl)?;
        }
        Ok(())
    }

    /// The next token that is not a table-building one (those are applied here); `None` at the
    /// end of the value.
    fn next_token(&mut self) -> Result<Option<(u8, usize)>> {
        if let Some(t) = self.pending.take() {
            return Ok(Some(t));
        }
        loop {
            let at = self.pos;
            let Some(&t) = self.b.get(at) else { return Ok(None) };
            self.pos += 1;
            match t {
                tok::NAME => {
                    let name = self.text()?;
                    self.tables.names.push(name);
                }
                tok::QNAME => {
                    let ns = self.name_ref()?;
                    let prefix = self.name_ref()?;
                    let local = self.name_ref()?;
                    self.tables.qnames.push(QName { ns, prefix, local });
                }
                tok::NM_FLUSH => self.tables = Tables::default(),
                tok::EXTN => {
                    let n = self.mb32()?;
                    self.take(n)?;
                }
                _ => return Ok(Some((t, at))),
            }
        }
    }

    fn name_ref(&mut self) -> Result<usize> {
        let at = self.pos;
        let i = self.mb32()?;
        if i > self.tables.names.len() {
            return Err(self.corrupt(at, format!("name {i} undefined ({} defined)", self.tables.names.len())));
        }
        Ok(i)
    }

    fn qname(&mut self) -> Result<Name> {
        let at = self.pos;
        let i = self.mb32()?;
        let q = *i
            .checked_sub(1)
            .and_then(|j| self.tables.qnames.get(j))
            .ok_or_else(|| self.corrupt(at, format!("qname {i} undefined ({} defined)", self.tables.qnames.len())))?;
        let t = &self.tables;
        let (prefix, local, ns) = (t.name(q.prefix), t.name(q.local), t.name(q.ns));
        if q.local == 0 {
            // A namespace declaration: the prefix is the whole attribute name.
            if !(prefix == "xmlns" || prefix.strip_prefix("xmlns:").is_some_and(|p| !p.is_empty())) {
                return Err(self.corrupt(at, format!("qname {i} has no local name and is no namespace declaration")));
            }
            return Ok(Name {
                prefix: prefix.to_string(),
                ns: String::new(),
                is_decl: true,
                written: prefix.to_string(),
            });
        }
        let written = if prefix.is_empty() { local.to_string() } else { format!("{prefix}:{local}") };
        Ok(Name { prefix: prefix.to_string(), ns: ns.to_string(), is_decl: false, written })
    }

    fn document(&mut self) -> Result<()> {
        while let Some((t, at)) = self.next_token()? {
            if let Some(v) = self.value(t, at)? {
                self.text.push_str(&v);
                continue;
            }
            self.flush_text()?;
            match t {
                tok::ELEMENT => self.element(at)?,
                tok::END_ELEM => {
                    let e = self.elements.pop().ok_or_else(|| self.corrupt(at, "end of element outside any"))?;
                    self.scope.truncate(e.scope_len);
                    self.emit("</")?;
                    self.emit(&e.written)?;
                    self.emit(">")?;
                }
                tok::COMMENT => {
                    let s = self.text()?;
                    self.emit(&format!("<!--{s}-->"))?;
                }
                tok::PI => {
                    let target = self.name_ref()?;
                    let target = self.tables.name(target).to_string();
                    let data = self.text()?;
                    let sep = if data.is_empty() { "" } else { " " };
                    self.emit(&format!("<?{target}{sep}{data}?>"))?;
                }
                tok::CDATA => self.cdata()?,
                tok::XML_TEXT => {
                    let s = self.text()?;
                    self.emit(&s)?;
                }
                tok::DOCTYPE => self.doctype()?,
                tok::NEST => {
                    if self.elements.len() + self.outer.len() >= MAX_DEPTH {
                        return Err(self.corrupt(at, format!("nesting deeper than {MAX_DEPTH}")));
                    }
                    self.outer.push(std::mem::take(&mut self.tables));
                    self.header()?;
                }
                tok::END_NEST => {
                    self.tables =
                        self.outer.pop().ok_or_else(|| self.corrupt(at, "end of nested document outside any"))?;
                }
                tok::ATTR
                | tok::END_ATTRS
                | tok::END_CDATA
                | tok::XMLDECL
                | tok::ENCODING
                | tok::SYSTEM
                | tok::PUBLIC
                | tok::SUBSET => return Err(self.corrupt(at, format!("token {t:#04X} out of place"))),
                _ => return Err(Error::unsupported(format!("binary XML token {t:#04X} at offset {at}"))),
            }
        }
        self.flush_text()?;
        if let Some(e) = self.elements.last() {
            return Err(self.corrupt(self.pos, format!("value ends inside element {}", e.written)));
        }
        if !self.outer.is_empty() {
            return Err(self.corrupt(self.pos, "value ends inside a nested document"));
        }
        Ok(())
    }

    /// Writes out the pending text node.
    fn flush_text(&mut self) -> Result<()> {
        if self.text.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.text);
        let escaped = escape_text(&text);
        self.emit(&escaped)
    }

    fn element(&mut self, at: usize) -> Result<()> {
        if self.elements.len() + self.outer.len() >= MAX_DEPTH {
            return Err(self.corrupt(at, format!("elements nested deeper than {MAX_DEPTH}")));
        }
        let name = self.qname()?;
        if name.is_decl {
            return Err(self.corrupt(at, "element named like a namespace declaration"));
        }
        let mut attrs: Vec<(Name, String)> = Vec::new();
        let mut held = name.written.len();
        let mut next = None;
        while let Some((t, at)) = self.next_token()? {
            match t {
                tok::ATTR => {
                    let n = self.qname()?;
                    // Names are shared: a two-byte reference can stand for a long one.
                    held += n.written.len() + n.ns.len() + n.prefix.len();
                    self.room(held)?;
                    attrs.push((n, String::new()));
                }
                tok::END_ATTRS => break,
                _ => match attrs.last_mut() {
                    None => {
                        next = Some((t, at));
                        break;
                    }
                    Some(_) => {
                        let v = self
                            .value(t, at)?
                            .ok_or_else(|| self.corrupt(at, format!("token {t:#04X} in an attribute list")))?;
                        if let Some((_, value)) = attrs.last_mut() {
                            value.push_str(&v);
                        }
                    }
                },
            }
        }
        let scope_len = self.scope.len();
        // Declarations written on this element come into scope first...
        for (n, value) in &attrs {
            if n.is_decl {
                let prefix = n.prefix.strip_prefix("xmlns:").unwrap_or("");
                self.scope.push((prefix.to_string(), value.clone()));
            }
        }
        // ...then any the element's and attributes' names imply but nobody declared.
        let mut implied = Vec::new();
        let uses = std::iter::once((&name.prefix, &name.ns, true))
            .chain(attrs.iter().filter(|(n, _)| !n.is_decl).map(|(n, _)| (&n.prefix, &n.ns, false)));
        for (prefix, ns, is_element) in uses {
            if prefix == "xml" || prefix == "xmlns" || (!is_element && prefix.is_empty()) {
                continue;
            }
            if self.lookup(prefix) != ns.as_str() {
                if self.scope[scope_len..].iter().any(|(p, _)| p == prefix) {
                    return Err(self.corrupt(at, format!("prefix {prefix:?} bound to two namespaces on one element")));
                }
                held += prefix.len() + ns.len();
                self.room(held)?;
                self.scope.push((prefix.clone(), ns.clone()));
                implied.push((prefix.clone(), ns.clone()));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (n, _) in &attrs {
            if !seen.insert((if n.is_decl { XMLNS_NS } else { n.ns.as_str() }, local_part(&n.written))) {
                return Err(self.corrupt(at, format!("attribute {} repeated", n.written)));
            }
        }
        let mut tag = format!("<{}", name.written);
        for (n, value) in &attrs {
            tag += &format!(" {}=\"{}\"", n.written, escape_attr(value));
        }
        for (prefix, ns) in &implied {
            let sep = if prefix.is_empty() { "" } else { ":" };
            tag += &format!(" xmlns{sep}{prefix}=\"{}\"", escape_attr(ns));
        }
        let next = match next {
            Some(t) => Some(t),
            None => self.next_token()?,
        };
        if let Some((tok::END_ELEM, _)) = next {
            tag += " />";
            self.scope.truncate(scope_len);
            return self.emit(&tag);
        }
        self.pending = next;
        tag += ">";
        self.emit(&tag)?;
        self.elements.push(OpenElement { written: name.written, scope_len });
        Ok(())
    }

    /// Fails if `extra` more bytes would take the output past its limit.
    fn room(&self, extra: usize) -> Result<()> {
        if self.out.len().saturating_add(extra) > self.limit {
            return Err(Error::unsupported(format!(
                "xml value of {} bytes decodes to more than {} bytes of text",
                self.b.len(),
                self.limit
            )));
        }
        Ok(())
    }

    fn lookup(&self, prefix: &str) -> &str {
        if prefix == "xml" {
            return XML_NS;
        }
        self.scope.iter().rev().find(|(p, _)| p == prefix).map_or("", |(_, ns)| ns.as_str())
    }

    fn cdata(&mut self) -> Result<()> {
        let mut s = self.text()?;
        loop {
            let at = self.pos;
            match self.byte()? {
                tok::CDATA => s += &self.text()?,
                tok::END_CDATA => break,
                other => return Err(self.corrupt(at, format!("token {other:#04X} inside CDATA"))),
            }
        }
        // "]]>" cannot appear inside a section: split it across two.
        self.emit(&format!("<![CDATA[{}]]>", s.replace("]]>", "]]]]><![CDATA[>")))
    }

    fn doctype(&mut self) -> Result<()> {
        let name = self.text()?;
        let mut s = format!("<!DOCTYPE {name}");
        let mut system = None;
        if self.b.get(self.pos) == Some(&tok::SYSTEM) {
            self.pos += 1;
            system = Some(self.text()?);
        }
        if self.b.get(self.pos) == Some(&tok::PUBLIC) {
            self.pos += 1;
            let public = self.text()?;
            s += &format!(" PUBLIC \"{public}\" \"{}\"", system.take().unwrap_or_default());
        }
        if let Some(system) = system {
            s += &format!(" SYSTEM \"{system}\"");
        }
        if self.b.get(self.pos) == Some(&tok::SUBSET) {
            self.pos += 1;
            s += &format!(" [{}]", self.text()?);
        }
        s += ">";
        self.emit(&s)
    }

    /// Decodes a value token (`t` already read) to its text, or `None` if `t` is no value token.
    fn value(&mut self, t: u8, at: usize) -> Result<Option<String>> {
        let fixed = |d: &mut Self, n: usize| -> Result<Vec<u8>> { Ok(d.take(n)?.to_vec()) };
        Ok(Some(match t {
            0x11 | 0x0E | 0x18 => self.text()?,
            0x10 | 0x0D | 0x16 => {
                let n = self.mb32()?;
                let b = self.take(n)?;
                let (cp, data) = (b.get(..4), b.get(4..).unwrap_or_default());
                let cp = cp.map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
                match cp {
                    Some(65001) => String::from_utf8(data.to_vec())
                        .map_err(|_| self.corrupt(at, "invalid UTF-8 in a varchar value"))?,
                    Some(1200) => crate::bytes::utf16le(data),
                    Some(cp) => crate::collation::decode_code_page(cp, data).ok_or_else(|| {
                        Error::unsupported(format!("xml varchar value in code page {cp} at offset {at}"))
                    })?,
                    None => return Err(self.corrupt(at, "varchar value shorter than its code page")),
                }
            }
            0x06 | 0x07 => fixed(self, 1)?[0].to_string(),
            0x88 => (fixed(self, 1)?[0] as i8).to_string(),
            0x86 => if fixed(self, 1)?[0] == 0 { "false" } else { "true" }.to_string(),
            0x01 => i16::from_le_bytes(fixed(self, 2)?.try_into().unwrap_or_default()).to_string(),
            0x89 => u16::from_le_bytes(fixed(self, 2)?.try_into().unwrap_or_default()).to_string(),
            0x02 => i32::from_le_bytes(fixed(self, 4)?.try_into().unwrap_or_default()).to_string(),
            0x8A => u32::from_le_bytes(fixed(self, 4)?.try_into().unwrap_or_default()).to_string(),
            0x08 => i64::from_le_bytes(fixed(self, 8)?.try_into().unwrap_or_default()).to_string(),
            0x8B => u64::from_le_bytes(fixed(self, 8)?.try_into().unwrap_or_default()).to_string(),
            0x03 => f32::from_le_bytes(fixed(self, 4)?.try_into().unwrap_or_default()).to_string(),
            0x04 => f64::from_le_bytes(fixed(self, 8)?.try_into().unwrap_or_default()).to_string(),
            0x09 => guid_text(&fixed(self, 16)?),
            0x0F | 0x0C | 0x17 | 0x1B | 0x85 => {
                let n = self.mb32()?;
                base64(self.take(n)?)
            }
            0x84 => {
                let n = self.mb32()?;
                self.take(n)?.iter().map(|b| format!("{b:02X}")).collect()
            }
            0x8C => {
                let q = self.qname()?;
                q.written
            }
            0x0A | 0x0B | 0x87 => {
                let n = self.mb32()?;
                let b = self.take(n)?;
                decimal_text(b, t == 0x87).ok_or_else(|| self.corrupt(at, format!("decimal value of {n} bytes")))?
            }
            0x05 => money_text(i64::from_le_bytes(fixed(self, 8)?.try_into().unwrap_or_default())),
            0x14 => money_text(i32::from_le_bytes(fixed(self, 4)?.try_into().unwrap_or_default()).into()),
            0x12 | 0x13 | 0x81 | 0x82 | 0x83 | 0x7A..=0x7F => {
                return Err(Error::unsupported(format!(
                    "binary XML typed value token {t:#04X} ({}) at offset {at}",
                    typed_name(t)
                )))
            }
            _ => return Ok(None),
        }))
    }
}

/// The local part of a name as written (`p:local` or `local`; a declaration's whole name).
fn local_part(written: &str) -> String {
    written.rsplit_once(':').map_or(written, |(_, l)| l).to_string()
}

fn typed_name(t: u8) -> &'static str {
    match t {
        0x12 => "datetime",
        0x13 => "smalldatetime",
        0x81 => "xsd:time",
        0x82 => "xsd:dateTime",
        0x83 => "xsd:date",
        0x7F => "date",
        0x7E => "datetime2",
        0x7D => "time",
        0x7C => "date with offset",
        0x7B => "datetimeoffset",
        _ => "time with offset",
    }
}

/// A decimal value (after its byte count, 7, 11, 15 or 19): precision, scale, sign (1 positive,
/// 0 negative), then the magnitude in 1-4 little-endian 32-bit words. xsd:decimal drops
/// trailing zeros of the fraction (and the point with them).
fn decimal_text(b: &[u8], trim: bool) -> Option<String> {
    if !matches!(b.len(), 7 | 11 | 15 | 19) {
        return None;
    }
    let (&[_precision, mut scale, sign], magnitude) = b.split_first_chunk::<3>()?;
    let mut m = [0u8; 16];
    m[..magnitude.len()].copy_from_slice(magnitude);
    let mut value = u128::from_le_bytes(m);
    if scale > 38 || value > 10u128.pow(38) {
        return None;
    }
    if trim {
        while scale > 0 && value % 10 == 0 {
            value /= 10;
            scale -= 1;
        }
    }
    let value = value as i128;
    Some(scaled_text(if sign == 0 { -value } else { value }, scale))
}

/// Money in 1/10000 units, with two to four decimals (as the .NET reader writes it).
fn money_text(v: i64) -> String {
    let mut s = scaled_text(v.into(), 4);
    for _ in 0..2 {
        if s.ends_with('0') {
            s.pop();
        }
    }
    s
}

/// Escapes element content: `&`, `<`, `>` and CR always; a text node of white space only keeps
/// its last character as a reference so that reparsing keeps the node.
pub(crate) fn escape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let whitespace_only = s.chars().all(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    let last = s.chars().count().saturating_sub(1);
    for (i, c) in s.chars().enumerate() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#xD;"),
            c if whitespace_only && i == last => out.push_str(&format!("&#x{:X};", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Escapes an attribute value for double quotes: `&`, `<`, `>`, `"`, and TAB, LF, CR.
fn escape_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' => out.push_str("&#x9;"),
            '\n' => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &x)| n | u32::from(x) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// Builds binary XML by hand.
    struct B(Vec<u8>);

    impl B {
        fn new() -> Self {
            B(vec![0xDF, 0xFF, 1, 0xB0, 0x04])
        }
        fn raw(mut self, b: &[u8]) -> Self {
            self.0.extend_from_slice(b);
            self
        }
        fn mb(mut self, mut v: usize) -> Self {
            loop {
                let low = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    self.0.push(low);
                    return self;
                }
                self.0.push(low | 0x80);
            }
        }
        fn text(self, s: &str) -> Self {
            let units: Vec<u16> = s.encode_utf16().collect();
            let b: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
            self.mb(units.len()).raw(&b)
        }
        /// Name-table entry (numbered from 1 in order of definition).
        fn name(self, s: &str) -> Self {
            self.raw(&[tok::NAME]).text(s)
        }
        /// Qname-table entry from name numbers (numbered from 1).
        fn qname(self, ns: usize, prefix: usize, local: usize) -> Self {
            self.raw(&[tok::QNAME]).mb(ns).mb(prefix).mb(local)
        }
        fn elem(self, q: usize) -> Self {
            self.raw(&[tok::ELEMENT]).mb(q)
        }
        fn attr(self, q: usize, value: &str) -> Self {
            self.raw(&[tok::ATTR]).mb(q).nv(value)
        }
        fn end_attrs(self) -> Self {
            self.raw(&[tok::END_ATTRS])
        }
        fn end(self) -> Self {
            self.raw(&[tok::END_ELEM])
        }
        fn nv(self, s: &str) -> Self {
            self.raw(&[0x11]).text(s)
        }
        fn decode(&self) -> Result<String> {
            decode_xml(&self.0)
        }
        fn ok(&self) -> String {
            self.decode().unwrap()
        }
    }

    /// `<a>` as qname 1 (name 1).
    fn with_a() -> B {
        B::new().name("a").qname(0, 0, 1)
    }

    #[test]
    fn element_with_escaped_text() {
        let x = with_a().elem(1).nv("x & <y> \"q\" 'r'").end();
        assert_eq!(x.ok(), "<a>x &amp; &lt;y&gt; \"q\" 'r'</a>");
    }

    #[test]
    fn text_in_pieces_is_one_node() {
        let x = with_a().elem(1).nv("ab").raw(&[0x02]).raw(&7i32.to_le_bytes()).nv("cd").end();
        assert_eq!(x.ok(), "<a>ab7cd</a>");
    }

    #[test]
    fn carriage_returns_and_whitespace_only_nodes_are_references() {
        assert_eq!(with_a().elem(1).nv("x\r\ny\tz").end().ok(), "<a>x&#xD;\ny\tz</a>");
        assert_eq!(with_a().elem(1).nv("  \n").end().ok(), "<a>  &#xA;</a>");
        assert_eq!(with_a().elem(1).nv(" ").end().ok(), "<a>&#x20;</a>");
    }

    #[test]
    fn empty_elements() {
        assert_eq!(with_a().elem(1).end().ok(), "<a />");
        // An empty string before the end marks a non-empty element with no content.
        assert_eq!(with_a().elem(1).nv("").end().ok(), "<a></a>");
        assert_eq!(with_a().elem(1).elem(1).end().elem(1).end().end().ok(), "<a><a /><a /></a>");
    }

    #[test]
    fn attributes_are_double_quoted_and_escaped() {
        let x = with_a().name("b").qname(0, 0, 2).name("c").qname(0, 0, 3);
        let x = x.elem(1).attr(2, "1 & 2 < 3 > \"0\"\t\n\r'").attr(3, "").end_attrs().end();
        assert_eq!(x.ok(), "<a b=\"1 &amp; 2 &lt; 3 &gt; &quot;0&quot;&#x9;&#xA;&#xD;'\" c=\"\" />");
        // Attributes then content.
        let x = with_a().name("b").qname(0, 0, 2).elem(1).attr(2, "v").end_attrs().nv("t").end();
        assert_eq!(x.ok(), "<a b=\"v\">t</a>");
    }

    #[test]
    fn namespace_declarations_and_prefixes() {
        // names: 1 urn:x, 2 p, 3 e, 4 xmlns:p, 5 at, 6 xmlns, 7 urn:d
        let x = B::new().name("urn:x").name("p").name("e").name("xmlns:p").name("at").name("xmlns").name("urn:d");
        // qnames: 1 p:e, 2 xmlns:p decl, 3 p:at, 4 xmlns decl, 5 e in urn:d, 6 e in no namespace
        let x = x.qname(1, 2, 3).qname(0, 4, 0).qname(1, 2, 5).qname(0, 6, 0).qname(7, 0, 3).qname(0, 0, 3);
        let x = x.elem(1).attr(2, "urn:x").attr(3, "v").attr(4, "urn:d").end_attrs();
        let x = x.elem(5).end().elem(1).end().end();
        assert_eq!(x.ok(), "<p:e xmlns:p=\"urn:x\" p:at=\"v\" xmlns=\"urn:d\"><e /><p:e /></p:e>");
    }

    #[test]
    fn undeclared_namespaces_are_declared() {
        // names: 1 urn:x, 2 p, 3 e, 4 urn:d
        let x = B::new().name("urn:x").name("p").name("e").name("urn:d");
        // qnames: 1 p:e, 2 e in urn:d, 3 e in no namespace
        let x = x.qname(1, 2, 3).qname(4, 0, 3).qname(0, 0, 3);
        assert_eq!(x.elem(1).end().ok(), "<p:e xmlns:p=\"urn:x\" />");
        let x = B::new().name("urn:x").name("p").name("e").name("urn:d");
        let x = x.qname(1, 2, 3).qname(4, 0, 3).qname(0, 0, 3);
        // The default namespace, then undeclaring it.
        assert_eq!(x.elem(2).elem(3).end().end().ok(), "<e xmlns=\"urn:d\"><e xmlns=\"\" /></e>");
    }

    #[test]
    fn comments_pis_cdata_declarations() {
        let x = B::new().raw(&[tok::XMLDECL]).text("1.0").raw(&[tok::ENCODING]).text("utf-16").raw(&[1]);
        let x = x.name("a").qname(0, 0, 1).name("pi");
        let x = x.raw(&[tok::PI]).mb(2).text("x=\"1\"").raw(&[tok::PI]).mb(2).text("");
        let x = x.elem(1).raw(&[tok::COMMENT]).text(" c ").raw(&[tok::CDATA]).text("<a>]]");
        let x = x.raw(&[tok::CDATA]).text(">&").raw(&[tok::END_CDATA]).end();
        assert_eq!(
            x.ok(),
            "<?xml version=\"1.0\" encoding=\"utf-16\" standalone=\"yes\"?><?pi x=\"1\"?><?pi?>\
             <a><!-- c --><![CDATA[<a>]]]]><![CDATA[>&]]></a>"
        );
        let x = B::new().raw(&[tok::DOCTYPE]).text("a").raw(&[tok::SYSTEM]).text("a.dtd");
        assert_eq!(x.ok(), "<!DOCTYPE a SYSTEM \"a.dtd\">");
    }

    #[test]
    fn tables_flush_extensions_skip_documents_nest() {
        let x = with_a().elem(1).raw(&[tok::EXTN]).mb(3).raw(&[9, 9, 9]);
        let x = x.raw(&[tok::NM_FLUSH]).name("b").qname(0, 0, 1).elem(1).end().end();
        assert_eq!(x.ok(), "<a><b /></a>");
        let x = with_a().elem(1).raw(&[tok::NEST, 0xDF, 0xFF, 1, 0xB0, 0x04]).name("n").qname(0, 0, 1);
        let x = x.elem(1).end().raw(&[tok::END_NEST]).elem(1).end().end();
        assert_eq!(x.ok(), "<a><n /><a /></a>");
    }

    #[test]
    fn characters_outside_the_bmp() {
        let x = with_a().name("b").qname(0, 0, 2).elem(1).attr(2, "𝄞").end_attrs().nv("😀 é").end();
        assert_eq!(x.ok(), "<a b=\"𝄞\">😀 é</a>");
        let x = B::new().name("ü𐌀").qname(0, 0, 1).elem(1).end();
        assert_eq!(x.ok(), "<ü𐌀 />");
    }

    #[test]
    fn long_lengths_use_several_bytes() {
        let long = "x".repeat(20_000);
        assert_eq!(with_a().elem(1).nv(&long).end().ok(), format!("<a>{long}</a>"));
    }

    #[test]
    fn typed_values() {
        let v = |b: &[u8]| with_a().elem(1).raw(b).end().ok();
        assert_eq!(v(&[0x07, 200]), "<a>200</a>");
        assert_eq!(v(&[0x88, 0xFF]), "<a>-1</a>");
        assert_eq!(v(&[0x01, 0xFE, 0xFF]), "<a>-2</a>");
        assert_eq!(v(&[0x89, 0xFE, 0xFF]), "<a>65534</a>");
        assert_eq!(v(&[&[0x08][..], &i64::MIN.to_le_bytes()].concat()), format!("<a>{}</a>", i64::MIN));
        assert_eq!(v(&[0x86, 1]), "<a>true</a>");
        assert_eq!(v(&[0x86, 0]), "<a>false</a>");
        assert_eq!(v(&[&[0x04][..], &13.4f64.to_le_bytes()].concat()), "<a>13.4</a>");
        // xsd:decimal 118 at scale 10 (as stored by AdventureWorksLT), then the same as SQL decimal.
        let dec = [0x13, 0x26, 0x0A, 0x01, 0x00, 0x18, 0x7B, 0xBD, 0x12, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(v(&[&[0x87][..], &dec].concat()), "<a>118</a>");
        assert_eq!(v(&[&[0x0A][..], &dec].concat()), "<a>118.0000000000</a>");
        assert_eq!(v(&[0x87, 7, 5, 2, 0, 0x05, 0, 0, 0]), "<a>-0.05</a>");
        assert_eq!(v(&[&[0x05][..], &199_900i64.to_le_bytes()].concat()), "<a>19.99</a>");
        assert_eq!(v(&[&[0x14][..], &12_345i32.to_le_bytes()].concat()), "<a>1.2345</a>");
        assert_eq!(v(&[0x0F, 5, b'h', b'e', b'l', b'l', b'o']), "<a>aGVsbG8=</a>");
        assert_eq!(v(&[0x84, 2, 0xAB, 0x01]), "<a>AB01</a>");
        assert_eq!(v(&[0x10, 7, 0xE4, 0x04, 0, 0, b'<', 0xE9, b'>']), "<a>&lt;é&gt;</a>");
        let guid = [0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff];
        assert_eq!(v(&[&[0x09][..], &guid].concat()), "<a>00112233-4455-6677-8899-AABBCCDDEEFF</a>");
        assert_eq!(v(&[0x8C, 1]), "<a>a</a>");
        let e = with_a().elem(1).raw(&[0x12, 0, 0, 0, 0, 0, 0, 0, 0]).end().decode().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains("0x12") && e.to_string().contains("offset 15"), "{e}");
    }

    #[test]
    fn base64_pads() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[0xFF, 0xEE, 0xDD, 0xCC]), "/+7dzA==");
    }

    #[test]
    fn unknown_tokens_are_unsupported_with_byte_and_offset() {
        let e = with_a().elem(1).raw(&[0x42]).decode().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.to_string().contains("0x42") && e.to_string().contains("offset 15"), "{e}");
        let e = B(vec![0xDF, 0xFF, 3, 0xB0, 0x04]).decode().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
    }

    #[test]
    fn malformed_values_are_corrupt_with_an_offset() {
        let corrupt = |b: &B, what: &str| {
            let e = b.decode().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}");
            assert!(e.to_string().contains("offset"), "{what}: {e}");
        };
        corrupt(&B(vec![0x3C, 0x00, 0x61, 0x00]), "text, not binary XML");
        corrupt(&B(vec![]), "empty");
        corrupt(&with_a().elem(2), "undefined qname");
        corrupt(&B::new().qname(0, 0, 5), "undefined name");
        corrupt(&with_a().elem(1), "unclosed element");
        corrupt(&with_a().end(), "end without element");
        corrupt(&with_a().raw(&[tok::END_ATTRS]), "stray end of attributes");
        corrupt(&with_a().name("b").qname(0, 0, 2).elem(1).attr(2, "v").end(), "attribute list not ended");
        corrupt(&B::new().name("xmlfoo").qname(0, 1, 0).elem(1).end(), "bad namespace declaration");
        corrupt(&with_a().elem(1).raw(&[0x11, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]), "text longer than 31 bits");
        corrupt(&with_a().elem(1).raw(&[0x11, 0x10, 0x41]), "text longer than the value");
        corrupt(&with_a().elem(1).raw(&[0x87, 5, 1, 2, 3, 4, 5]).end(), "decimal of a bad size");
        corrupt(&with_a().elem(1).attr(1, "x").attr(1, "y").end_attrs().end(), "repeated attribute");
        // A declaration of prefix a and an attribute named a do not clash.
        let x = with_a().name("xmlns:a").qname(0, 2, 0).elem(1).attr(2, "urn:a").attr(1, "v").end_attrs().end();
        assert_eq!(x.ok(), "<a xmlns:a=\"urn:a\" a=\"v\" />");
        // names 1 u1, 2 u2, 3 p, 4 x, 5 y; p:x in u1 and p:y in u2 on one element.
        let x = B::new().name("u1").name("u2").name("p").name("x").name("y").qname(1, 3, 4).qname(2, 3, 5);
        corrupt(&x.elem(1).attr(2, "v").end_attrs().end(), "one prefix, two namespaces");
    }

    #[test]
    fn depth_and_output_are_limited() {
        let mut x = with_a();
        for _ in 0..MAX_DEPTH + 1 {
            x = x.elem(1);
        }
        assert_eq!(x.decode().unwrap_err().kind(), ErrorKind::Corrupt);
        // A long name referenced by many two-byte elements would expand enormously.
        let mut x = B::new().name(&"n".repeat(30_000)).qname(0, 0, 1);
        for _ in 0..20_000 {
            x = x.elem(1).end();
        }
        let e = x.decode().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(output_limit(usize::MAX) <= i32::MAX as usize);
        // ... and so would many attributes of one element, each naming it.
        let mut x = B::new().name(&"n".repeat(30_000)).qname(0, 0, 1).elem(1);
        for _ in 0..20_000 {
            x = x.raw(&[tok::ATTR, 1]);
        }
        let e = x.end_attrs().end().decode().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    }

    /// Every truncation and many byte flips of a rich value decode or fail without panicking.
    #[test]
    fn damaged_values_never_panic() {
        let x = B::new().name("urn:x").name("p").name("e").name("xmlns:p").name("at");
        let x = x.qname(1, 2, 3).qname(0, 4, 0).qname(1, 2, 5).elem(1).attr(2, "urn:x").attr(3, "v").end_attrs();
        let x = x.raw(&[tok::COMMENT]).text("c").nv("t&t").raw(&[0x87, 7, 5, 2, 1, 5, 0, 0, 0]);
        let x = x.raw(&[tok::CDATA]).text("d").raw(&[tok::END_CDATA, tok::PI]).mb(2).text("x").elem(1).end().end();
        let good = x.0.clone();
        assert!(decode_xml(&good).is_ok());
        for n in 0..good.len() {
            let _ = decode_xml(&good[..n]);
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut bad = good.clone();
            let at = 5 + (seed as usize >> 8) % (bad.len() - 5);
            bad[at] = (seed >> 40) as u8;
            let _ = decode_xml(&bad);
        }
    }
}
