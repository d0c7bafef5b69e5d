//! The modules of another process (for `metron sample --pid`): read from `/proc/<pid>/maps`
//! instead of the loader, with each module's load bias worked out from its ELF program
//! headers.
//!
//! A module is a file with an executable mapping. Its bias (runtime address minus file
//! address) comes from one of its mappings: the mapping at file offset `off` and address
//! `start` holds the `PT_LOAD` segment whose page-aligned file offset is `off`, so
//! `bias = start - page_align(p_vaddr)`. Its runtime ranges are its executable mappings.

use crate::sys::LoadedObject;
use object::{Object, ObjectSegment};

/// One line of `/proc/<pid>/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// Runtime start.
    pub start: u64,
    /// Runtime end (exclusive).
    pub end: u64,
    /// `r`, `w`, `x` as the kernel shows them.
    pub perms: String,
    /// File offset of `start`.
    pub offset: u64,
    /// The file, `[stack]`, `[vdso]`, ..., or empty for anonymous memory.
    pub path: String,
}

impl Mapping {
    /// Executable.
    pub fn executable(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }
}

/// The mappings of process `pid`.
pub fn mappings(pid: u32) -> std::io::Result<Vec<Mapping>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    Ok(text.lines().filter_map(parse_line).collect())
}

fn parse_line(line: &str) -> Option<Mapping> {
    let mut parts = line.split_whitespace();
    let (start, end) = parts.next()?.split_once('-')?;
    let perms = parts.next()?.to_string();
    let offset = u64::from_str_radix(parts.next()?, 16).ok()?;
    let _dev = parts.next()?;
    let _inode = parts.next()?;
    let path = parts.collect::<Vec<_>>().join(" ");
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        perms,
        offset,
        path,
    })
}

/// A file module of another process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessModule {
    /// The file.
    pub path: String,
    /// Load bias: runtime address minus file address.
    pub bias: u64,
    /// Runtime `[start, end)` of its executable mappings.
    pub ranges: Vec<(u64, u64)>,
}

/// The file modules of process `pid` (files with an executable mapping), with their biases.
pub fn modules(pid: u32) -> Vec<ProcessModule> {
    loaded_objects(pid)
        .into_iter()
        .map(|o| ProcessModule {
            path: String::from_utf8_lossy(&o.name).into_owned(),
            bias: o.bias,
            ranges: o.segments,
        })
        .collect()
}

/// The file modules of process `pid`, as the loader would list them.
pub(crate) fn loaded_objects(pid: u32) -> Vec<LoadedObject> {
    let Ok(maps) = mappings(pid) else {
        return Vec::new();
    };
    let mut out: Vec<LoadedObject> = Vec::new();
    for m in maps
        .iter()
        .filter(|m| m.executable() && m.path.starts_with('/'))
    {
        if let Some(o) = out.iter_mut().find(|o| o.name == m.path.as_bytes()) {
            o.segments.push((m.start, m.end));
            continue;
        }
        let Some(bias) = bias_of(m) else { continue };
        out.push(LoadedObject {
            name: m.path.clone().into_bytes(),
            bias,
            segments: vec![(m.start, m.end)],
        });
    }
    out
}

/// The load bias of the module mapped by `m`, from the file's program headers.
fn bias_of(m: &Mapping) -> Option<u64> {
    let map = crate::sys::map_file(std::path::Path::new(&m.path)).ok()?;
    let obj = object::File::parse(&*map).ok()?;
    const PAGE: u64 = 4096;
    obj.segments().find_map(|s| {
        let (off, _) = s.file_range();
        (off & !(PAGE - 1) == m.offset).then(|| m.start.wrapping_sub(s.address() & !(PAGE - 1)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_parse_and_this_process_finds_its_own_executable() {
        let m = parse_line("7f1c00000000-7f1c00021000 r-xp 00002000 08:01 1234   /usr/lib/a b.so")
            .unwrap();
        assert_eq!(
            (m.start, m.end, m.offset),
            (0x7f1c_0000_0000, 0x7f1c_0002_1000, 0x2000)
        );
        assert!(m.executable());
        assert_eq!(m.path, "/usr/lib/a b.so");
        let anon = parse_line("7f1c00000000-7f1c00021000 rwxp 00000000 00:00 0").unwrap();
        assert_eq!(anon.path, "");

        // Our own modules through /proc agree with the loader's biases.
        let ours = crate::sys::loaded_objects();
        let theirs = loaded_objects(std::process::id());
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let found = theirs
            .iter()
            .find(|o| o.name == exe.as_os_str().as_encoded_bytes())
            .expect("the executable is among the modules");
        assert_eq!(found.bias, ours[0].bias);
    }
}
