//! The text the XML parser reads, made from a metric file, and the way back from offsets in
//! it to the file's lines and columns.
//!
//! rocprofiler's metric files are not quite XML: attribute values may be unquoted
//! (`<metric name=SQ_WAVES block=SQ event=4>`) and a file holds several top-level sections
//! (`<gfx9>…</gfx9> <global>…</global>`) with no root. [`Prepared`] quotes such values and,
//! when asked, wraps the file in a synthetic root, recording every byte it inserts so that
//! positions still point into the file the user wrote.

use crate::expr::Pos;

/// The name of the synthetic root wrapped around a file of several top-level sections.
pub(crate) const WRAPPER: &str = "metron-metrics-file";

/// A metric file's text with insertions, and the map back to the file.
pub(crate) struct Prepared {
    /// The text handed to the XML parser.
    pub(crate) text: String,
    /// `(offset in text where an insertion starts, its length)`, in order.
    inserted: Vec<(usize, usize)>,
    /// `cumulative[i]`: the bytes inserted by `inserted[..=i]`.
    cumulative: Vec<usize>,
}

impl Prepared {
    /// `file` with each `(file offset, text)` of `insertions` (sorted by offset) inserted.
    pub(crate) fn new(file: &str, insertions: &[(usize, &str)]) -> Prepared {
        let extra: usize = insertions.iter().map(|(_, t)| t.len()).sum();
        let mut text = String::with_capacity(file.len() + extra);
        let mut inserted = Vec::with_capacity(insertions.len());
        let mut cumulative = Vec::with_capacity(insertions.len());
        let mut copied = 0;
        let mut total = 0;
        for &(at, piece) in insertions {
            let at = at.clamp(copied, file.len());
            text.push_str(&file[copied..at]);
            copied = at;
            inserted.push((text.len(), piece.len()));
            total += piece.len();
            cumulative.push(total);
            text.push_str(piece);
        }
        text.push_str(&file[copied..]);
        Prepared {
            text,
            inserted,
            cumulative,
        }
    }

    /// The file offset of byte `at` of [`Prepared::text`]; a byte that was inserted maps to
    /// the place it was inserted at.
    pub(crate) fn file_offset(&self, at: usize) -> usize {
        let n = self.inserted.partition_point(|&(start, _)| start < at);
        if n == 0 {
            return at;
        }
        let (start, len) = self.inserted[n - 1];
        let before = self.cumulative[n - 1] - len;
        at - before - (at - start).min(len)
    }
}

/// Line starts of a text, to turn byte offsets into 1-based lines and columns (in characters).
pub(crate) struct LineIndex<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    pub(crate) fn new(text: &'t str) -> LineIndex<'t> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        LineIndex { text, starts }
    }

    /// The position of byte `offset` (clamped into the text, moved back to a character
    /// boundary).
    pub(crate) fn pos(&self, offset: usize) -> Pos {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        let column = self.text[start..offset].chars().count() + 1;
        Pos {
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }

    /// The byte offset of a 1-based line and column (clamped into the text).
    pub(crate) fn offset(&self, line: u32, column: u32) -> usize {
        let line = (line.max(1) as usize).min(self.starts.len());
        let start = self.starts[line - 1];
        let rest = &self.text[start..];
        let skip = column.saturating_sub(1) as usize;
        start + rest.char_indices().nth(skip).map_or(rest.len(), |(i, _)| i)
    }
}

/// Where quotes go around the unquoted attribute values of `text`'s tags, as
/// `(file offset, quote)` pairs, in order. Comments, CDATA, processing instructions and
/// declarations are skipped; a value runs to white space, `>` or `/>`, and is quoted with `'`
/// when it holds a `"`.
pub(crate) fn unquoted_values(text: &str) -> Vec<(usize, &'static str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let find = |from: usize, what: &str| {
        text.get(from..)
            .and_then(|rest| rest.find(what))
            .map_or(b.len(), |i| from + i + what.len())
    };
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let rest = &text[i..];
        if rest.starts_with("<!--") {
            i = find(i + 4, "-->");
            continue;
        }
        if rest.starts_with("<![CDATA[") {
            i = find(i + 9, "]]>");
            continue;
        }
        if rest.starts_with("<?") {
            i = find(i + 2, "?>");
            continue;
        }
        if rest.starts_with("<!") {
            i = find(i + 2, ">");
            continue;
        }
        // A start or end tag: up to its '>', past quoted values.
        i += 1;
        while i < b.len() && b[i] != b'>' && b[i] != b'<' {
            match b[i] {
                q @ (b'"' | b'\'') => {
                    i = text[i + 1..]
                        .find(char::from(q))
                        .map_or(b.len(), |j| i + 1 + j + 1);
                }
                b'=' => {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    let start = i;
                    let ends_value = |i: usize| {
                        b[i].is_ascii_whitespace()
                            || matches!(b[i], b'>' | b'<' | b'"' | b'\'')
                            || (b[i] == b'/' && b.get(i + 1) == Some(&b'>'))
                    };
                    while i < b.len() && !ends_value(i) {
                        i += 1;
                    }
                    if i > start {
                        let quote = if text[start..i].contains('"') {
                            "'"
                        } else {
                            "\""
                        };
                        out.push((start, quote));
                        out.push((i, quote));
                    }
                }
                _ => i += 1,
            }
        }
    }
    out
}

/// Where the synthetic root's start tag goes: after a leading XML declaration, if any.
pub(crate) fn wrapper_start(text: &str) -> usize {
    let body = text.trim_start_matches('\u{feff}');
    let lead = text.len() - body.len();
    if body.starts_with("<?xml") {
        body.find("?>").map_or(lead, |i| lead + i + 2)
    } else {
        lead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quoted(text: &str) -> String {
        Prepared::new(text, &unquoted_values(text)).text
    }

    #[test]
    fn unquoted_values_are_quoted_and_quoted_ones_kept() {
        assert_eq!(
            quoted("<metric name=SQ_WAVES block=SQ event=4 descr=\"a b\"></metric>"),
            "<metric name=\"SQ_WAVES\" block=\"SQ\" event=\"4\" descr=\"a b\"></metric>"
        );
        assert_eq!(
            quoted("<metric name=R expr=100*A/B/>"),
            "<metric name=\"R\" expr=\"100*A/B\"/>"
        );
        assert_eq!(quoted("<a x = 1 y='=2'/>"), "<a x = \"1\" y='=2'/>");
        assert_eq!(
            quoted("<!-- <a x=1> --><?pi x=1?><b/>"),
            "<!-- <a x=1> --><?pi x=1?><b/>"
        );
    }

    #[test]
    fn offsets_map_back_to_the_file() {
        let file = "<a x=1 y=22/>";
        let p = Prepared::new(file, &unquoted_values(file));
        assert_eq!(p.text, "<a x=\"1\" y=\"22\"/>");
        let value_1 = p.text.find('1').unwrap();
        assert_eq!(p.file_offset(value_1), file.find('1').unwrap());
        let y = p.text.find('y').unwrap();
        assert_eq!(p.file_offset(y), file.find('y').unwrap());
        let end = p.text.find("/>").unwrap();
        assert_eq!(p.file_offset(end), file.find("/>").unwrap());
        // An inserted quote maps to where it was inserted.
        assert_eq!(p.file_offset(value_1 - 1), value_1 - 1);
    }

    #[test]
    fn line_index_positions_round_trip() {
        let text = "ab\ncé\n\nx";
        let lines = LineIndex::new(text);
        assert_eq!(lines.pos(0), Pos { line: 1, column: 1 });
        assert_eq!(lines.pos(4), Pos { line: 2, column: 2 });
        assert_eq!(lines.pos(text.len()), Pos { line: 4, column: 2 });
        for off in [0, 3, 4, 7, 8] {
            let p = lines.pos(off);
            assert_eq!(lines.offset(p.line, p.column), off);
        }
    }

    #[test]
    fn the_wrapper_goes_after_an_xml_declaration() {
        assert_eq!(wrapper_start("<gfx9/>"), 0);
        assert_eq!(wrapper_start("<?xml version=\"1.0\"?>\n<gfx9/>"), 21);
    }
}
