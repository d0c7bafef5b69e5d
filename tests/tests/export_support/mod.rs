//! Readers of the three formats `metron export` writes, written from the reference's
//! descriptions (`profiler-output-files.txt`, `api-log-format.txt`) and Metron's documented
//! choices (docs/src/export.md), not from `metron-export`'s code, so that the tests compare two
//! independent readings of a run.
//!
//! - [`Atp::parse`]: a `key=value` header up to the first `=====NAME=====` line, then sections:
//!   `<api> API Trace Output` and `<api> Timestamp Output` (thread blocks: a thread id line, a
//!   count line, that many entries), `<api> Kernel Timestamp Output` (a count line, that many
//!   kernel lines), `<api> Stack Trace Output` (thread blocks of source-code lines) and
//!   `Perfmarker Output` (thread blocks of `clBeginPerfMarker NAME TS GROUP` /
//!   `clEndPerfMarker TS`). Fields are separated by whitespace; a string holding whitespace is
//!   between double quotes with `\"` and `\\` escaped.
//! - [`Occupancy::parse`]: `# key=value` comment lines, a header line naming the columns, one
//!   comma-separated row per kernel (`"` quoting).
//! - [`ApiLogLine::parse`]: `TID <tid> START TIME 0x<ticks> DURATION 0x<µs> [CMD ID <id>]
//!   <name>(<parameters>) = <return value>`.
//!
//! Every reader fails (panics, naming the line) on anything it does not expect: a count that
//! does not match its entries, an unknown section, a malformed number.
#![allow(dead_code)]

use std::collections::BTreeMap;

/// Whitespace-separated fields, `"…"` quoting with backslash escapes.
pub fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut quoted = false;
    let mut escaped = false;
    for c in line.chars() {
        if quoted {
            let s = cur.as_mut().expect("inside a token");
            if escaped {
                s.push(if c == 'n' { '\n' } else { c });
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                quoted = false;
            } else {
                s.push(c);
            }
        } else if c.is_whitespace() {
            if let Some(s) = cur.take() {
                out.push(s);
            }
        } else if c == '"' && cur.is_none() {
            cur = Some(String::new());
            quoted = true;
        } else {
            cur.get_or_insert_with(String::new).push(c);
        }
    }
    assert!(!quoted, "unterminated quote in {line:?}");
    out.extend(cur);
    out
}

/// One `ReturnValue = APIName ( ParameterList )` line.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiEntry {
    pub return_value: String,
    pub name: String,
    /// The `;`-separated parameters (empty when the list is empty).
    pub parameters: Vec<String>,
}

/// One Timestamp line: API type, name, start and end (ns).
#[derive(Debug, Clone, PartialEq)]
pub struct TimestampEntry {
    pub kind: u32,
    pub name: String,
    pub start: u64,
    pub end: u64,
}

/// One Kernel Timestamp line.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelEntry {
    pub name: String,
    pub handle: String,
    pub start: u64,
    pub end: u64,
    pub device_name: String,
    pub device_handle: String,
    pub queue: u64,
    pub device_index: u64,
    pub packet_type: String,
    pub packet_id: u64,
    pub packet: String,
}

/// One Source Code line.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceEntry {
    pub api: String,
    pub function: String,
    pub line: u64,
    pub file: Option<String>,
}

/// One Perfmarker line.
#[derive(Debug, Clone, PartialEq)]
pub enum Marker {
    Begin {
        name: String,
        ts: u64,
        group: String,
    },
    End {
        ts: u64,
    },
}

/// A parsed `.atp` file.
#[derive(Debug, Default)]
pub struct Atp {
    pub header: BTreeMap<String, String>,
    /// API family → thread → calls.
    pub api_trace: BTreeMap<String, BTreeMap<u32, Vec<ApiEntry>>>,
    /// API family → thread → timestamps.
    pub timestamps: BTreeMap<String, BTreeMap<u32, Vec<TimestampEntry>>>,
    /// API family → kernels.
    pub kernels: BTreeMap<String, Vec<KernelEntry>>,
    /// Thread → source-code lines.
    pub source: BTreeMap<u32, Vec<SourceEntry>>,
    /// Thread → perf markers.
    pub markers: BTreeMap<u32, Vec<Marker>>,
    /// Section names in file order.
    pub sections: Vec<String>,
}

fn num(s: &str, what: &str) -> u64 {
    s.parse()
        .unwrap_or_else(|_| panic!("{what}: {s:?} is not an integer"))
}

/// Thread blocks: `(tid, lines)`.
fn thread_blocks(lines: &[&str], section: &str) -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let tid = num(lines[i].trim(), &format!("{section}: thread id")) as u32;
        let n = num(
            lines.get(i + 1).expect("a count line").trim(),
            &format!("{section}: count"),
        ) as usize;
        let body = lines
            .get(i + 2..i + 2 + n)
            .unwrap_or_else(|| panic!("{section}: thread {tid} announces {n} lines, has fewer"));
        out.push((tid, body.iter().map(|s| s.to_string()).collect()));
        i += 2 + n;
    }
    out
}

impl Atp {
    /// Parses the text of a `.atp` file.
    pub fn parse(text: &str) -> Atp {
        let mut atp = Atp::default();
        let mut lines = text.lines().peekable();
        while let Some(l) = lines.peek() {
            if l.starts_with("=====") {
                break;
            }
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("header line without '=': {l:?}"));
            atp.header.insert(k.to_string(), v.to_string());
            lines.next();
        }
        let rest: Vec<&str> = lines.collect();
        let mut i = 0;
        while i < rest.len() {
            let title = rest[i]
                .strip_prefix("=====")
                .and_then(|t| t.strip_suffix("====="))
                .unwrap_or_else(|| panic!("expected a section line, got {:?}", rest[i]));
            let mut j = i + 1;
            while j < rest.len() && !rest[j].starts_with("=====") {
                j += 1;
            }
            let body = &rest[i + 1..j];
            atp.sections.push(title.to_string());
            atp.section(title, body);
            i = j;
        }
        atp
    }

    fn section(&mut self, title: &str, body: &[&str]) {
        if title == "Perfmarker Output" {
            for (tid, lines) in thread_blocks(body, title) {
                let list = self.markers.entry(tid).or_default();
                for l in lines {
                    let t = tokens(&l);
                    list.push(match t[0].as_str() {
                        "clBeginPerfMarker" => {
                            assert_eq!(t.len(), 4, "begin marker line {l:?}");
                            Marker::Begin {
                                name: t[1].clone(),
                                ts: num(&t[2], "marker time"),
                                group: t[3].clone(),
                            }
                        }
                        "clEndPerfMarker" => {
                            assert_eq!(t.len(), 2, "end marker line {l:?}");
                            Marker::End {
                                ts: num(&t[1], "marker time"),
                            }
                        }
                        other => panic!("unknown perf marker entry {other:?}"),
                    });
                }
            }
            return;
        }
        let (family, kind) = title
            .split_once(' ')
            .unwrap_or_else(|| panic!("unknown section {title:?}"));
        let family = family.to_string();
        match kind {
            "API Trace Output" => {
                for (tid, lines) in thread_blocks(body, title) {
                    let list = self
                        .api_trace
                        .entry(family.clone())
                        .or_default()
                        .entry(tid)
                        .or_default();
                    for l in lines {
                        let (ret, call) = l
                            .split_once(" = ")
                            .unwrap_or_else(|| panic!("API line without ' = ': {l:?}"));
                        let (name, params) = call
                            .split_once(" (")
                            .unwrap_or_else(|| panic!("API line without '(': {l:?}"));
                        let params = params
                            .strip_suffix(')')
                            .unwrap_or_else(|| panic!("API line without ')': {l:?}"))
                            .trim();
                        list.push(ApiEntry {
                            return_value: ret.to_string(),
                            name: name.to_string(),
                            parameters: if params.is_empty() {
                                Vec::new()
                            } else {
                                params.split(';').map(|p| p.trim().to_string()).collect()
                            },
                        });
                    }
                }
            }
            "Timestamp Output" => {
                for (tid, lines) in thread_blocks(body, title) {
                    let list = self
                        .timestamps
                        .entry(family.clone())
                        .or_default()
                        .entry(tid)
                        .or_default();
                    for l in lines {
                        let t = tokens(&l);
                        assert!(t.len() >= 4, "timestamp line {l:?}");
                        list.push(TimestampEntry {
                            kind: num(&t[0], "API type") as u32,
                            name: t[1].clone(),
                            start: num(&t[2], "start"),
                            end: num(&t[3], "end"),
                        });
                    }
                }
            }
            "Kernel Timestamp Output" => {
                let n = num(body.first().expect("a count line").trim(), title) as usize;
                assert_eq!(
                    body.len(),
                    n + 1,
                    "{title}: count {n}, lines {}",
                    body.len() - 1
                );
                let list = self.kernels.entry(family).or_default();
                for l in &body[1..] {
                    let t = tokens(l);
                    assert_eq!(t.len(), 11, "kernel line {l:?}");
                    list.push(KernelEntry {
                        name: t[0].clone(),
                        handle: t[1].clone(),
                        start: num(&t[2], "kernel start"),
                        end: num(&t[3], "kernel end"),
                        device_name: t[4].clone(),
                        device_handle: t[5].clone(),
                        queue: num(&t[6], "queue index"),
                        device_index: num(&t[7], "agent index"),
                        packet_type: t[8].clone(),
                        packet_id: num(&t[9], "packet id"),
                        packet: t[10].clone(),
                    });
                }
            }
            "Stack Trace Output" => {
                for (tid, lines) in thread_blocks(body, title) {
                    let list = self.source.entry(tid).or_default();
                    for l in lines {
                        let t = tokens(&l);
                        assert!(t.len() == 3 || t.len() == 4, "source line {l:?}");
                        list.push(SourceEntry {
                            api: t[0].clone(),
                            function: t[1].clone(),
                            line: num(&t[2], "line"),
                            file: t.get(3).cloned(),
                        });
                    }
                }
            }
            _ => panic!("unknown section {title:?}"),
        }
    }
}

/// CSV fields with `"` quoting.
pub fn csv(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

/// A parsed `.occupancy` file.
#[derive(Debug)]
pub struct Occupancy {
    /// `# key=value` header lines.
    pub header: BTreeMap<String, String>,
    pub columns: Vec<String>,
    /// Column → value, one map per kernel.
    pub rows: Vec<BTreeMap<String, String>>,
}

impl Occupancy {
    pub fn parse(text: &str) -> Occupancy {
        let mut header = BTreeMap::new();
        let mut lines = text.lines();
        let columns = loop {
            let l = lines.next().expect("a header line naming the columns");
            match l.strip_prefix("# ") {
                Some(h) => {
                    if let Some((k, v)) = h.split_once('=') {
                        header.insert(k.to_string(), v.to_string());
                    }
                }
                None => break csv(l),
            }
        };
        let rows = lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let cells = csv(l);
                assert_eq!(cells.len(), columns.len(), "row {l:?}");
                columns.iter().cloned().zip(cells).collect()
            })
            .collect();
        Occupancy {
            header,
            columns,
            rows,
        }
    }
}

/// One API log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiLogLine {
    pub tid: u32,
    pub start_ticks: u64,
    pub duration_us: u64,
    pub cmd_id: Option<u64>,
    pub name: String,
    pub parameters: String,
    pub return_value: String,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(
        s.strip_prefix("0x")
            .unwrap_or_else(|| panic!("{s:?} is not 0x-prefixed")),
        16,
    )
    .unwrap_or_else(|_| panic!("{s:?} is not hex"))
}

impl ApiLogLine {
    pub fn parse(line: &str) -> ApiLogLine {
        /// The next whitespace-separated word of `rest`, moving past it.
        fn take<'a>(rest: &mut &'a str, expect: Option<&str>, line: &str) -> &'a str {
            let t = rest.trim_start();
            let end = t.find(char::is_whitespace).unwrap_or(t.len());
            let (w, r) = t.split_at(end);
            if let Some(e) = expect {
                assert_eq!(w, e, "in {line:?}");
            }
            *rest = r;
            w
        }
        let mut rest = line;
        take(&mut rest, Some("TID"), line);
        let tid = num(take(&mut rest, None, line), "TID") as u32;
        take(&mut rest, Some("START"), line);
        take(&mut rest, Some("TIME"), line);
        let start_ticks = hex(take(&mut rest, None, line));
        take(&mut rest, Some("DURATION"), line);
        let duration_us = hex(take(&mut rest, None, line));
        let mut cmd_id = None;
        if rest.trim_start().starts_with("CMD ID ") {
            take(&mut rest, Some("CMD"), line);
            take(&mut rest, Some("ID"), line);
            cmd_id = Some(num(take(&mut rest, None, line), "CMD ID"));
        }
        let call = rest.trim();
        let (call, ret) = call
            .rsplit_once(" = ")
            .unwrap_or_else(|| panic!("no return value in {line:?}"));
        let open = call.find('(').expect("'(' of the call");
        assert!(call.ends_with(')'), "no ')' in {line:?}");
        ApiLogLine {
            tid,
            start_ticks,
            duration_us,
            cmd_id,
            name: call[..open].to_string(),
            parameters: call[open + 1..call.len() - 1].to_string(),
            return_value: ret.to_string(),
        }
    }
}

/// Every entry of an API log.
pub fn api_log(text: &str) -> Vec<ApiLogLine> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(ApiLogLine::parse)
        .collect()
}

/// `CLOCK_MONOTONIC` ns of a tick count, from `metadata.json`'s clock calibration (the inverse
/// of how the log's START TIME is documented).
pub fn ns_of_ticks(metadata: &serde_json::Value, ticks: u64) -> f64 {
    let c = &metadata["clock"];
    let t0 = c["reference_ticks"].as_u64().expect("reference_ticks") as f64;
    let ns0 = c["reference_monotonic_ns"].as_u64().expect("reference ns") as f64;
    let per = c["initial_ns_per_tick"].as_f64().expect("ns per tick");
    ns0 + (ticks as f64 - t0) * per
}
