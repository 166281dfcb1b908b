//! Server-rendered HTML: escaping and the page frame. Everything interpolated into a page goes
//! through [`esc`] (text and attribute values alike); the frame links only the studio's own
//! style sheet and script, both compiled in ([`STYLE`], [`SCRIPT`]).

use std::fmt::Write;

/// The studio's style sheet.
pub const STYLE: &str = include_str!("../assets/studio.css");
/// The studio's one script: hover highlighting in the page and record views.
pub const SCRIPT: &str = include_str!("../assets/studio.js");

/// `text` escaped for HTML text and double-quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` escaped for a URL path segment or query value.
pub fn url(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A whole page: title, navigation, `body`, the JSON twin's link, the equivalent CLI command and,
/// for remote objects, what reading them has fetched (`fetched`: empty for local files).
pub fn page(database: &str, title: &str, json_link: &str, cli: &str, body: &str, fetched: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t} · {d} · mdfkit studio</title><link rel=\"stylesheet\" href=\"/static/studio.css\">\
         <script src=\"/static/studio.js\" defer></script></head><body>\
         <nav><a href=\"/\" class=\"brand\">mdfkit studio</a> <span class=\"db\">{d}</span> \
         <a href=\"/\">Overview</a> <a href=\"/tables\">Tables</a> <a href=\"/map\">Map</a> <a href=\"/search\">Search</a></nav>\
         <main><h1>{t}</h1>{body}</main>\
         <footer><a href=\"{j}\" id=\"json-twin\">JSON</a> · the same from the command line: <code>{c}</code>{f}</footer>\
         </body></html>\n",
        f = if fetched.is_empty() { String::new() } else { format!("<br><span id=\"fetched\">{}</span>", esc(fetched)) },
        t = esc(title),
        d = esc(database),
        j = esc(json_link),
        c = esc(cli),
    )
}

/// A table of text cells (escaped) under `headers`; cells given as `Cell::Html` are put in as is.
pub fn table(headers: &[&str], rows: &[Vec<Cell>], class: &str) -> String {
    let mut out = format!("<table class=\"{}\"><thead><tr>", esc(class));
    for h in headers {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            match cell {
                Cell::Text(t) => {
                    let _ = write!(out, "<td>{}</td>", esc(t));
                }
                Cell::Null => out.push_str("<td class=\"null\">NULL</td>"),
                Cell::Html(h) => {
                    let _ = write!(out, "<td>{h}</td>");
                }
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// One cell of [`table`].
pub enum Cell {
    /// Text, escaped when rendered.
    Text(String),
    /// A SQL NULL, shown as a styled `NULL` (distinct from the text "NULL").
    Null,
    /// Markup built by the caller from escaped parts.
    Html(String),
}

/// A text cell holding `t`'s display form.
pub fn text(t: impl ToString) -> Cell {
    Cell::Text(t.to_string())
}

/// A link cell: `href` and `label` are escaped here.
pub fn link(href: &str, label: &str) -> Cell {
    Cell::Html(a(href, label))
}

/// `<a href>` with both parts escaped.
pub fn a(href: &str, label: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), esc(label))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_urls() {
        assert_eq!(esc("<script>\"x\" & 'y'"), "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;");
        assert_eq!(url("dbo.Order Details/ä"), "dbo.Order%20Details%2F%C3%A4");
        assert_eq!(a("/t?x=\"1\"", "<b>"), "<a href=\"/t?x=&quot;1&quot;\">&lt;b&gt;</a>");
    }
}
