#!/usr/bin/env python3
"""Writes gpu-amd/src/api_table.rs (how many entries the HSA API tables have, and the C
function of each) and gpu-amd/src/sys_api_trace.rs (one pass-through wrapper per entry of the
tables CoreApiTable and AmdExtTable of hsa_api_trace.h, for METRON_GPU_AMD_HSA_API).

Each wrapper has the C function's signature, in the types the x86-64 System V ABI passes
alike: HSA handles (`struct { uint64_t handle; }`) as u64, enums as u32, every pointer and
callback as *mut c_void. It reads the clock, calls the runtime's own entry (saved when the
table was patched), and records the call under the entry's index. The index is the entry's
position in the table structs (CoreApiTable first, then AmdExtTable), the same order as
`sys_tables.rs`.

An entry whose prototype this script cannot read is left without a wrapper (listed in the
output's UNWRAPPED). A parameter type it does not know stops the script: add it to the
tables below after checking its definition in the headers.

Usage: scripts/gen-hsa-api-trace.py [/usr/include/hsa] [OUT_DIR]   (default OUT_DIR: gpu-amd/src)
"""
import os
import re
import sys

include = sys.argv[1] if len(sys.argv) > 1 else "/usr/include/hsa"
out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu-amd", "src")


def strip(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"^\s*#[^\n]*", "", text, flags=re.M)
    return re.sub(r"HSA_DEPRECATED(\(\"[^\"]*\"\))?", "", text)


trace = strip(open(os.path.join(include, "hsa_api_trace.h")).read())
headers = trace + "".join(
    strip(open(os.path.join(include, h)).read())
    for h in ("hsa.h", "hsa_ext_amd.h", "hsa_ext_image.h", "hsa_ext_finalize.h")
)

# `struct { uint64_t handle; }`: one INTEGER eightbyte, passed as a u64.
HANDLES = {
    "hsa_agent_t", "hsa_signal_t", "hsa_region_t", "hsa_amd_memory_pool_t",
    "hsa_code_object_reader_t", "hsa_code_object_t", "hsa_code_symbol_t", "hsa_executable_t",
    "hsa_executable_symbol_t", "hsa_isa_t", "hsa_signal_group_t", "hsa_wavefront_t",
    "hsa_cache_t", "hsa_callback_data_t", "hsa_loaded_code_object_t",
}
# C enums (int-sized) and 32-bit typedefs.
U32 = {
    "hsa_status_t", "hsa_access_permission_t", "hsa_agent_info_t",
    "hsa_amd_agent_memory_pool_info_t", "hsa_amd_coherency_type_t", "hsa_amd_copy_direction_t",
    "hsa_amd_memory_pool_info_t", "hsa_amd_queue_priority_t", "hsa_cache_info_t",
    "hsa_code_object_info_t", "hsa_code_symbol_info_t", "hsa_default_float_rounding_mode_t",
    "hsa_executable_info_t", "hsa_executable_state_t", "hsa_executable_symbol_info_t",
    "hsa_flush_mode_t", "hsa_fp_type_t", "hsa_isa_info_t", "hsa_profile_t",
    "hsa_queue_type32_t", "hsa_region_info_t", "hsa_signal_condition_t", "hsa_system_info_t",
    "hsa_wait_state_t", "hsa_wavefront_info_t", "hsa_extension_t", "hsa_queue_type_t",
    "hsa_amd_memory_pool_location_t", "uint32_t",
}
SCALARS = {
    "uint64_t": "u64", "uint16_t": "u16", "uint8_t": "u8", "int": "i32", "int32_t": "i32",
    "size_t": "usize", "bool": "bool", "hsa_signal_value_t": "i64", "hsa_file_t": "i32",
    "void": "()",
}
# Function-pointer typedefs: passed as pointers.
CALLBACKS = {
    "hsa_amd_signal_handler", "hsa_amd_deallocation_callback_t",
    "hsa_amd_system_event_callback_t", "hsa_amd_queue_intercept_handler",
    "hsa_amd_runtime_queue_notifier",
}


def rust_type(c):
    c = " ".join(c.replace("const", " ").split())
    if "*" in c or "(" in c:
        return "P"
    if c in HANDLES:
        return "u64"
    if c in U32:
        return "u32"
    if c in SCALARS:
        return SCALARS[c]
    if c in CALLBACKS:
        return "P"
    sys.exit("gen-hsa-api-trace: unknown C type %r: classify it in HANDLES/U32/SCALARS" % c)


def prototype(name):
    m = re.search(r"([\w\s\*]+?)\s+(?:HSA_API\s+)?\b%s\s*\(([^;{]*?)\)\s*;" % name, headers, re.S)
    if not m:
        return None
    ret = re.findall(r"\w+\s*\**", m.group(1))[-1]
    params = [" ".join(p.split()) for p in re.split(r",(?![^()]*\))", m.group(2)) if p.strip()]
    if params == ["void"]:
        params = []
    types = []
    for p in params:
        if "(" in p:
            types.append("P")
            continue
        p = re.sub(r"\[\s*\w*\s*\]$", "*", p)  # an array parameter is a pointer
        typ = re.match(r"(.*?)\w+$", p).group(1) if re.search(r"[\w\*]\s+\**\s*\w+$|\*\s*\w+$", p) else p
        types.append(rust_type(typ))
    return rust_type(ret), ret.strip() == "hsa_status_t", types


def fields(struct):
    body = re.search(r"struct %s \{(.*?)\};" % struct, trace, re.S).group(1)
    return re.findall(r"\*\s*(\w+)_fn\s*;", body)


entries = []
for struct in ("CoreApiTable", "AmdExtTable"):
    entries += [(struct, f) for f in fields(struct)]
core_len = len(fields("CoreApiTable"))

table = [
    "//! The entries of the HSA API tables (`CoreApiTable` then `AmdExtTable` of",
    "//! `hsa_api_trace.h`, the order of `sys_tables.rs`): how many there are, and the C function",
    "//! of each by index. Generated by `scripts/gen-hsa-api-trace.py` from the ROCm 5.2 headers.",
    "",
    "/// Entries in `CoreApiTable` (indices below this are core, the rest AMD extension).",
    "pub const CORE_ENTRIES: usize = %d;" % core_len,
    "/// Entries in both tables.",
    "pub const ENTRIES: usize = %d;" % len(entries),
    "",
    "/// The C function of every entry, by index.",
    "pub const NAMES: [&str; ENTRIES] = [",
]
table += ['    "%s",' % f for _, f in entries]
table += ["];"]

out = [
    "//! Pass-through wrappers for every HSA API table entry (`METRON_GPU_AMD_HSA_API`):",
    "//! generated by `scripts/gen-hsa-api-trace.py` from the ROCm 5.2 headers. An entry's index",
    "//! is its position in `CoreApiTable` then `AmdExtTable` (`api_table.rs`); each wrapper",
    "//! calls the runtime's entry saved in [`ORIGINAL`] and records the call with",
    "//! [`crate::api_calls::record`]. Parameters are in the types the x86-64 System V ABI",
    "//! passes alike (handles as u64, enums as u32, pointers and callbacks as `P`).",
    "",
    "#![allow(clippy::too_many_arguments)]",
    "",
    "use crate::api_table::ENTRIES;",
    "use crate::records::ApiCall;",
    "use std::ffi::c_void;",
    "use std::sync::atomic::{AtomicUsize, Ordering};",
    "",
    "type P = *mut c_void;",
    "",
    "/// The runtime's own entry for every wrapped index (0 until patched).",
    "pub static ORIGINAL: [AtomicUsize; ENTRIES] = [const { AtomicUsize::new(0) }; ENTRIES];",
    "",
    "/// Defines one wrapper: `status` records the hsa_status_t it returns, `plain` records 0.",
    "macro_rules! wrap {",
    "    ($id:literal, $name:ident, ($($a:ident: $t:ty),*) -> $ret:ty, $status:ident) => {",
    "        unsafe extern \"C\" fn $name($($a: $t),*) -> $ret {",
    "            let start = crate::clock::monotonic_ns();",
    "            let original = ORIGINAL[$id].load(Ordering::Acquire);",
    "            // SAFETY: `original` is the runtime's non-null entry for this index, saved before",
    "            // the table pointed here; its C signature is this wrapper's (same ABI types).",
    "            let f = unsafe {",
    "                std::mem::transmute::<usize, unsafe extern \"C\" fn($($t),*) -> $ret>(original)",
    "            };",
    "            // SAFETY: the caller's arguments, passed on unchanged under the entry's contract.",
    "            let r = unsafe { f($($a),*) };",
    "            crate::api_calls::record(ApiCall($id), start, wrap!(@status $status r), 0);",
    "            r",
    "        }",
    "    };",
    "    (@status status $r:ident) => { $r as i32 };",
    "    (@status plain $r:ident) => { 0 };",
    "}",
    "",
]
wrapped = []
unwrapped = []
signatures = []
for i, (_, f) in enumerate(entries):
    proto = prototype(f)
    if proto is None:
        unwrapped.append(f)
        continue
    ret, status, types = proto
    args = ", ".join("a%d: %s" % (k, t) for k, t in enumerate(types))
    out.append("wrap!(%d, %s, (%s) -> %s, %s);" % (i, f, args, ret, "status" if status else "plain"))
    wrapped.append((i, f))
    signatures.append((i, ",".join(types) + "->" + ret))
out += [
    "",
    "/// Each wrapper's signature as `args->ret` in the ABI types above (for the header check).",
    "pub const SIGNATURES: [(usize, &str); %d] = [" % len(wrapped),
]
out += ['    (%d, "%s"),' % (i, sig) for i, sig in signatures]
out += [
    "];",
    "",
    "/// The wrapper of every index (`None`: the prototype was not read; the entry stays as is).",
    "pub fn wrapper(id: usize) -> Option<unsafe extern \"C\" fn()> {",
    "    let w = match id {",
]
for i, f in wrapped:
    out.append("        %d => as_raw(%s as *const ())," % (i, f))
out += [
    "        _ => return None,",
    "    };",
    "    Some(w)",
    "}",
    "",
    "/// A wrapper as the untyped table entry type.",
    "fn as_raw(wrapper: *const ()) -> unsafe extern \"C\" fn() {",
    "    // SAFETY: a wrapper's address; it is only stored in the table slot of its own entry,",
    "    // whose callers use the entry's real signature, which is the wrapper's.",
    "    unsafe { std::mem::transmute::<*const (), unsafe extern \"C\" fn()>(wrapper) }",
    "}",
    "",
    "/// Entries left without a wrapper (their prototype is not in the public headers).",
    "pub const UNWRAPPED: [&str; %d] = [%s];" % (len(unwrapped), ", ".join('"%s"' % u for u in unwrapped)),
]
for name, lines in (("api_table.rs", table), ("sys_api_trace.rs", out)):
    with open(os.path.join(out_dir, name), "w") as f:
        f.write("\n".join(lines) + "\n")
