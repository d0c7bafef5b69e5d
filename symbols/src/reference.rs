//! binutils `addr2line` as the reference to check and measure the [`crate::Symbolizer`]
//! against: run it on a set of file addresses, parse its answers, and compare them with ours.
//! Used by the agreement test and the throughput benchmark; not needed to symbolize.

use crate::Frame;
use object::{Object, ObjectSection, ObjectSymbol};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// One frame as binutils prints it (`-f -i -C`): `??` and `??:0` become `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefFrame {
    /// Demangled function name.
    pub function: Option<String>,
    /// `file:line` (discriminators dropped).
    pub location: Option<String>,
}

/// `n` file addresses spread over the `.text` section of the ELF file at `path`, inside
/// functions (a sized function symbol covers them: the padding between functions is never
/// executed, and binutils names it after the function before it): evenly spaced with an odd
/// stride, so they land at every offset inside instructions and functions. Empty when the
/// file has no `.text`.
pub fn text_addresses(path: &Path, n: usize) -> Vec<u64> {
    let Ok(map) = crate::sys::map_file(path) else {
        return Vec::new();
    };
    let Ok(obj) = object::File::parse(&*map) else {
        return Vec::new();
    };
    let Some(text) = obj.section_by_name(".text") else {
        return Vec::new();
    };
    let (start, size) = (text.address(), text.size());
    if size == 0 || n == 0 {
        return Vec::new();
    }
    let mut functions: Vec<(u64, u64)> = obj
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .map(|s| (s.address(), s.address() + s.size()))
        .collect();
    functions.sort_unstable();
    let in_function = |a: u64| {
        let i = functions.partition_point(|f| f.0 <= a);
        functions[..i].iter().rev().take(8).any(|f| a < f.1)
    };
    // Walk with a stride a little shorter than size/n, keeping addresses inside functions.
    let stride = ((size / n as u64) * 3 / 4).max(1) | 1;
    let mut out = Vec::with_capacity(n);
    let mut i = 0u64;
    while out.len() < n && i < 4 * n as u64 {
        let a = start + (i * stride) % size;
        if in_function(a) {
            out.push(a);
        }
        i += 1;
    }
    out
}

/// Runs `addr2line -a -f -i -C -e binary` on `addrs` (file addresses) and returns each
/// address's frames, innermost first. `None` when binutils is missing or its output does not
/// parse.
pub fn binutils_addr2line(binary: &Path, addrs: &[u64]) -> Option<Vec<Vec<RefFrame>>> {
    let mut child = Command::new("addr2line")
        .args(["-a", "-f", "-i", "-C", "-e"])
        .arg(binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut input = String::with_capacity(addrs.len() * 20);
    for a in addrs {
        input.push_str(&format!("{a:#x}\n"));
    }
    let mut stdin = child.stdin.take()?;
    // Written from a thread: binutils answers as it reads, and a full pipe would block both.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    if !out.status.success() {
        return None;
    }
    parse_binutils(&String::from_utf8_lossy(&out.stdout), addrs.len())
}

/// Parses `-a -f -i` output: an address line (`0x...`), then function/location line pairs.
fn parse_binutils(text: &str, expected: usize) -> Option<Vec<Vec<RefFrame>>> {
    let mut result: Vec<Vec<RefFrame>> = Vec::with_capacity(expected);
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") {
            result.push(Vec::new());
            continue;
        }
        let location = lines.next()?;
        let current = result.last_mut()?;
        current.push(RefFrame {
            function: Some(line.to_string()).filter(|f| f != "??"),
            location: normalize_location(location),
        });
    }
    (result.len() == expected).then_some(result)
}

fn normalize_location(loc: &str) -> Option<String> {
    let loc = loc.split(" (discriminator").next().unwrap_or(loc).trim();
    let (file, line) = loc.rsplit_once(':')?;
    if file == "??" {
        return None;
    }
    match line.parse::<u32>() {
        Ok(0) => Some(file.to_string()),
        Ok(l) => Some(format!("{file}:{l}")),
        Err(_) => Some(file.to_string()),
    }
}

/// Our frames in the reference's terms: a `module+0x...`/`[unknown]+0x...` fallback name is
/// "no function" (binutils prints `??` there).
pub fn as_reference(frames: &[Frame]) -> Vec<RefFrame> {
    frames
        .iter()
        .map(|f| RefFrame {
            function: Some(f.function.clone()).filter(|name| {
                !(name.starts_with(&*f.module) && name[f.module.len()..].starts_with("+0x")
                    || name.starts_with("[unknown]+0x"))
            }),
            location: f.location(),
        })
        .collect()
}

/// How two symbolizations of the same addresses compare.
#[derive(Clone, Debug, Default)]
pub struct Agreement {
    /// Frames compared (per address, the larger of the two frame counts).
    pub frames: usize,
    /// Frames whose function names agree (see [`Agreement::compare`]).
    pub functions_equal: usize,
    /// Frames whose function names are equal as they are, position by position.
    pub functions_equal_direct: usize,
    /// Frames whose `file:line` agree.
    pub locations_equal: usize,
    /// Addresses whose frames all agree.
    pub addresses_equal: usize,
    /// Addresses compared.
    pub addresses: usize,
    /// The addresses that differ: (address, ours, reference).
    pub differences: Vec<(u64, Vec<RefFrame>, Vec<RefFrame>)>,
}

impl Agreement {
    /// Compares per address; frames are matched innermost first.
    ///
    /// Function names are compared as binutils names them. Where the DWARF has no linkage
    /// names (Rust's `debug = "line-tables-only"`), binutils (bfd `dwarf2.c`) names the
    /// *innermost* frame after the ELF symbol of the containing function and every other frame
    /// with its `DW_AT_name`, so the innermost inlined function's own name is lost. We name the
    /// innermost frame with its `DW_AT_name` and the *outermost* (the real function) with the
    /// ELF symbol, its full path. So an address with inlined frames is also compared in
    /// binutils' convention: its first name against our outermost (the same symbol), the
    /// middle names as they are, its last name (`DW_AT_name` of the real function) against
    /// the last path segment of ours (`<T as Tr>::f` ~ `f<u8>`); our innermost name has no
    /// counterpart there. Where binutils does not swap (it names the innermost frame by
    /// DWARF), only the outermost frame is compared by last path segment. The better of the
    /// two comparisons counts; [`Agreement::functions_equal_direct`] counts exact equality
    /// alone, position by position.
    pub fn compare(addrs: &[u64], ours: &[Vec<RefFrame>], reference: &[Vec<RefFrame>]) -> Self {
        let mut a = Agreement::default();
        for ((addr, o), r) in addrs.iter().zip(ours).zip(reference) {
            a.addresses += 1;
            let n = o.len().max(r.len());
            a.frames += n;
            let direct = (0..n)
                .filter(|&i| {
                    let (of, rf) = (o.get(i).map(|f| &f.function), r.get(i).map(|f| &f.function));
                    of == rf || i == n - 1 && n >= 2 && same_short_name(of, rf)
                })
                .count();
            let exact = (0..n)
                .filter(|&i| o.get(i).map(|f| &f.function) == r.get(i).map(|f| &f.function))
                .count();
            let convention = if o.len() == r.len() && n >= 2 {
                (0..n)
                    .filter(|&i| {
                        let rf = r[i].function.as_deref();
                        if i == 0 {
                            rf == o[n - 1].function.as_deref()
                        } else if i == n - 1 {
                            rf.map(short_name) == o[i].function.as_deref().map(short_name)
                        } else {
                            rf == o[i].function.as_deref()
                        }
                    })
                    .count()
            } else {
                0
            };
            let f_eq = direct.max(convention);
            let l_eq = (0..n)
                .filter(|&i| o.get(i).map(|f| &f.location) == r.get(i).map(|f| &f.location))
                .count();
            a.functions_equal_direct += exact;
            a.functions_equal += f_eq;
            a.locations_equal += l_eq;
            if f_eq == n && l_eq == n && o.len() == r.len() {
                a.addresses_equal += 1;
            } else {
                a.differences.push((*addr, o.clone(), r.clone()));
            }
        }
        a
    }

    /// Percent of frames with the same function, compared directly (no convention).
    pub fn function_direct_pct(&self) -> f64 {
        pct(self.functions_equal_direct, self.frames)
    }

    /// Percent of frames with the same function.
    pub fn function_pct(&self) -> f64 {
        pct(self.functions_equal, self.frames)
    }

    /// Percent of frames with the same `file:line`.
    pub fn location_pct(&self) -> f64 {
        pct(self.locations_equal, self.frames)
    }

    /// Percent of addresses whose frames all agree.
    pub fn address_pct(&self) -> f64 {
        pct(self.addresses_equal, self.addresses)
    }
}

fn same_short_name(a: Option<&Option<String>>, b: Option<&Option<String>>) -> bool {
    match (a, b) {
        (Some(Some(a)), Some(Some(b))) => short_name(a) == short_name(b),
        _ => false,
    }
}

/// The last path segment of a demangled name, without generic arguments:
/// `<&str as core::str::pattern::Pattern>::is_contained_in` and `is_contained_in<u8>` are both
/// `is_contained_in`.
pub fn short_name(name: &str) -> &str {
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = name.as_bytes();
    let mut end = name.len();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => {
                if depth == 0 && i > start {
                    end = i;
                }
                depth += 1;
            }
            b'>' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                start = i + 2;
                end = name.len();
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    name.get(start..end.max(start)).unwrap_or(name)
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binutils_output_parses_with_inlined_frames_and_unknowns() {
        let text =
            "0x0000000000001000\ninner\n/src/a.rs:3\nouter\n/src/a.rs:10 (discriminator 2)\n\
                    0x0000000000002000\n??\n??:0\n";
        let parsed = parse_binutils(text, 2).unwrap();
        assert_eq!(parsed[0].len(), 2);
        assert_eq!(parsed[0][1].location.as_deref(), Some("/src/a.rs:10"));
        assert_eq!(
            parsed[1],
            vec![RefFrame {
                function: None,
                location: None
            }]
        );
        assert!(parse_binutils(text, 3).is_none());
    }

    #[test]
    fn short_names_drop_the_path_and_the_generics() {
        assert_eq!(
            short_name("<&str as core::str::pattern::Pattern>::is_contained_in"),
            "is_contained_in"
        );
        assert_eq!(
            short_name("alloc_slow_path<alloc::vec::Vec<u8>>"),
            "alloc_slow_path"
        );
        assert_eq!(
            short_name("typed_arena::Arena<T>::alloc_slow_path"),
            "alloc_slow_path"
        );
        assert_eq!(short_name("{closure#3}"), "{closure#3}");
    }
}
