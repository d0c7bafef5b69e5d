#!/usr/bin/env python3
"""Checks that the `metron` crate's modules depend only downwards.

Reads every sdk/src/**/*.rs file, finds the crate paths it names (`use crate::...`, `crate::x::`
paths in code, `super::` that climbs to another module, `$crate::` in macros), and builds the
module-to-module import graph at the level of the layer map below. Each module belongs to one
layer; a module may import modules of its own layer or of a lower one. An import from a lower
layer to a higher one fails the check unless the (importer, imported) pair is in ALLOWED, where
each entry is debt with the reason it is still there.

Code under `#[cfg(test)]` modules is not counted: unit tests may reach any module.

Usage: scripts/check-layers.py [--src DIR] [--verbose]
  --src DIR   the crate's src folder (default: sdk/src next to this script's repository)
  --verbose   also list every module-to-module import
Exit status: 0 when every upward import is allowed, 1 otherwise (each printed as
`file:line: module A (layer X) imports module B (layer Y, higher)`), 2 on bad usage.
"""

import os
import re
import sys

# Layers, lowest first. A module is placed by the longest prefix of its path (`a::b`) found here;
# the crate root (lib.rs, the public facade) is above every layer.
LAYERS = [
    (
        "hot path",
        "record layout and recording state (crate metron-core, re-exported), per-thread "
        "buffers, the region API, clock and syscalls, the ABI between copies of Metron in one "
        "process",
        [
            "sys",
            "record",
            "buffer",
            "thread_buffer",
            "region",
            "run_state",
            "shared_runtime::abi",
        ],
    ),
    # `sink` is the crate metron-core (core/), `sinks` the crate metron-sinks (sinks/), which
    # `metron` re-exports at its root: the compiler keeps them from naming anything above.
    (
        "decoding",
        "records decoded into `Event`s, the `Sink` trait (crate metron-core)",
        ["sink"],
    ),
    (
        "sinks",
        "outputs that see `Event`s and plain config values (crate metron-sinks)",
        ["sinks"],
    ),
    (
        "sources",
        "producers of records besides the region API: sampling, counters (and what the machine "
        "can count), GPU glue, crash reports",
        ["sampling", "counters", "info", "gpu", "crash"],
    ),
    (
        "runtime",
        "wires sources to sinks, owns the settings, the run folder, its metadata and the rank, "
        "and the forwarding of call-site registrations to an owner copy (the table itself is "
        "in metron-core, where a `Callsite`'s first use reaches it)",
        [
            "settings",
            "runtime",
            "pipeline",
            "backend_threads",
            "metadata",
            "output_path",
            "ranks",
            "shared_runtime",
            "callsite",
            "first_use",
            "run_report",
        ],
    ),
    (
        "lifecycle",
        "process start and exit, fork, signals",
        ["lifecycle"],
    ),
]
ROOT = "crate root"

# Upward imports that are still there: (importer, imported) -> why. Each entry is debt to remove;
# there is none (the hot path reaches the runtime through `thread_buffer::RecordingHooks`).
ALLOWED = {}

CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
MOD_DECL = re.compile(r"\b(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*([;{])")
PATH_START = re.compile(r"(?<![\w:])(\$crate|crate|super|self)\s*::")
IDENT = re.compile(r"[A-Za-z_]\w*")


def strip(text):
    """Blanks comments, string and char literals, keeping every newline and offset."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            j = n if end < 0 else end + 1 + len(m.group(1))
            blank(i + 1, j - 1)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{..}'), or a lifetime ('a) which is left alone.
            m = re.match(r"'(\\.[^']*|[^'\\])'", text[i:])
            if m:
                blank(i + 1, i + len(m.group(0)) - 1)
                i += len(m.group(0))
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def module_of_file(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return rel


def matching(text, i):
    """Index of the bracket closing the one at text[i]."""
    open_c = text[i]
    close_c = {"{": "}", "(": ")", "[": "]"}[open_c]
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def split_top(text, a, b):
    """Splits text[a:b] at commas outside brackets; yields (start offset, item)."""
    depth, start = 0, a
    for j in range(a, b):
        ch = text[j]
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
        elif ch == "," and depth == 0:
            yield start, text[start:j]
            start = j + 1
    yield start, text[start:b]


def scopes(code, file_mod):
    """Yields (start, end, module path, is_test) for the file and each inline `mod x { }`."""
    result = [(0, len(code), file_mod, False)]

    def walk(a, b, mod, test):
        pos = a
        while True:
            m = MOD_DECL.search(code, pos, b)
            if not m:
                return
            if m.group(2) == "{":
                close = matching(code, m.end() - 1)
                before = code[max(a, m.start() - 200):m.start()]
                attrs = re.findall(r"#\s*\[[^\]]*\]\s*$", before)
                is_test = test or bool(attrs and CFG_TEST.search(attrs[-1]))
                sub = mod + [m.group(1)]
                result.append((m.end(), close, sub, is_test))
                walk(m.end(), close, sub, is_test)
                pos = close + 1
            else:
                pos = m.end()

    walk(0, len(code), file_mod, False)
    return result


def scope_at(scope_list, offset):
    best = scope_list[0]
    for s in scope_list:
        if s[0] <= offset <= s[1] and s[1] - s[0] <= best[1] - best[0]:
            best = s
    return best


def test_files(src, files):
    """Files declared as `#[cfg(test)] mod x;`."""
    skip = set()
    for path in files:
        code = strip(open(path, encoding="utf-8").read())
        for m in MOD_DECL.finditer(code):
            if m.group(2) != ";":
                continue
            before = code[max(0, m.start() - 200):m.start()]
            attrs = re.findall(r"#\s*\[[^\]]*\]\s*$", before)
            if attrs and CFG_TEST.search(attrs[-1]):
                base = os.path.dirname(path)
                stem = os.path.basename(path)[:-3]
                if stem not in ("mod", "lib", "main"):
                    base = os.path.join(base, stem)
                for cand in (os.path.join(base, m.group(1) + ".rs"), os.path.join(base, m.group(1), "mod.rs")):
                    skip.add(os.path.normpath(cand))
    return skip


def root_names(src):
    """Names the crate root defines or re-exports: name -> module path (empty = root itself)."""
    lib = os.path.join(src, "lib.rs")
    names = {}
    if not os.path.exists(lib):
        return names
    code = strip(open(lib, encoding="utf-8").read())
    for m in re.finditer(r"\bpub\s+use\s+([^;]+);", code):
        tree = m.group(1)
        for path, alias in flatten_use(tree):
            if path and path[0] not in ("crate", "self", "super"):
                names[alias] = path[:-1] if len(path) > 1 else path
    for m in re.finditer(r"\b(?:fn|struct|enum|static|const|type|trait)\s+([A-Za-z_]\w*)", code):
        names.setdefault(m.group(1), [])
    for m in re.finditer(r"macro_rules!\s*([A-Za-z_]\w*)", code):
        names.setdefault(m.group(1), [])
    for m in MOD_DECL.finditer(code):
        if m.group(2) == "{":
            names[m.group(1)] = []  # an inline module of the root belongs to the root
    return names


def flatten_use(tree, prefix=None):
    """Flattens a use tree (`a::{b, c::d as e}`) into (path, name) pairs."""
    prefix = prefix or []
    tree = tree.strip()
    if "{" in tree and not tree.startswith("{"):
        head, rest = tree.split("{", 1)
        segs = [s.strip() for s in head.split("::") if s.strip()]
        return flatten_use("{" + rest, prefix + segs)
    if tree.startswith("{"):
        inner = tree[1:tree.rfind("}")]
        out = []
        for _, item in split_top(inner, 0, len(inner)):
            if item.strip():
                out.extend(flatten_use(item, prefix))
        return out
    alias = None
    m = re.match(r"(.*?)\s+as\s+(\w+)$", tree)
    if m:
        tree, alias = m.group(1), m.group(2)
    segs = [s.strip() for s in tree.split("::") if s.strip()]
    path = prefix + segs
    if path and path[-1] == "self":
        path = path[:-1]
    if not path:
        return []
    return [(path, alias or path[-1])]


class Graph:
    def __init__(self, src):
        self.src = src
        self.units = {}
        for idx, (name, _desc, mods) in enumerate(LAYERS):
            for mod in mods:
                self.units[tuple(mod.split("::"))] = idx
        self.roots = root_names(src)
        self.edges = {}  # (from unit, to unit) -> [(file, line)]
        self.unplaced = set()

    def unit(self, path):
        """The layer-map entry a module path falls under, or None for the crate root."""
        for k in range(len(path), 0, -1):
            if tuple(path[:k]) in self.units:
                return "::".join(path[:k])
        if path and self.roots.get(path[0]) == []:
            return None
        if path:
            self.unplaced.add(path[0])
            return path[0]
        return None

    def layer(self, unit):
        if unit is None:
            return len(LAYERS)
        key = tuple(unit.split("::"))
        return self.units.get(key, len(LAYERS))

    def layer_name(self, idx):
        return LAYERS[idx][0] if idx < len(LAYERS) else ROOT

    def target(self, code, i, base):
        """Resolves the path that continues at code[i] (after `crate::`, with `base` the module
        reached so far); returns a list of (offset, module path) it names."""
        m = re.compile(r"\s*").match(code, i)
        i = m.end()
        while True:
            m = re.compile(r"super\s*::\s*").match(code, i)
            if not m:
                break
            base = base[:-1]
            i = m.end()
        if i < len(code) and code[i] == "{":
            close = matching(code, i)
            out = []
            for start, item in split_top(code, i + 1, close):
                lead = len(item) - len(item.lstrip())
                for path, _alias in flatten_use(item):
                    out.append((start + lead, self.resolve(base, path)))
            return out
        segs = []
        while True:
            m = IDENT.match(code, i)
            if not m:
                break
            segs.append(m.group(0))
            i = m.end()
            m = re.compile(r"\s*::\s*").match(code, i)
            if not m or (m.end() < len(code) and code[m.end()] in "{<*"):
                if m and m.end() < len(code) and code[m.end()] == "{":
                    sub = self.target(code, m.end(), base + segs)
                    return sub or [(i, self.resolve(base, segs))]
                break
            i = m.end()
        return [(i, self.resolve(base, segs))]

    def resolve(self, base, segs):
        path = list(base) + [s for s in segs if s != "self"]
        if not base and path:
            # A name at the crate root: a child module, a re-export or the root's own item.
            head = path[0]
            if self.roots.get(head) == []:
                return []
            if tuple([head]) in self.units or any(k[0] == head for k in self.units):
                return path
            if head in self.roots:
                return list(self.roots[head])
            if os.path.exists(os.path.join(self.src, head + ".rs")) or os.path.isdir(os.path.join(self.src, head)):
                return path
            return []
        return path

    def scan(self, path):
        rel = os.path.relpath(path)
        if rel.startswith(".."):
            rel = os.path.abspath(path)
        text = open(path, encoding="utf-8").read()
        code = strip(text)
        file_mod = module_of_file(self.src, path)
        scope_list = scopes(code, file_mod)
        line_starts = [0] + [k + 1 for k, ch in enumerate(code) if ch == "\n"]

        def line_of(off):
            lo, hi = 0, len(line_starts) - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if line_starts[mid] <= off:
                    lo = mid
                else:
                    hi = mid - 1
            return lo + 1

        for m in PATH_START.finditer(code):
            start, end, mod, is_test = scope_at(scope_list, m.start())
            if is_test:
                continue
            kind = m.group(1)
            if kind in ("crate", "$crate"):
                base = []
            elif kind == "super":
                base = mod[:-1]
            else:
                base = list(mod)
            # `a::crate::` cannot occur; skip `self::`/`super::` that stay inside the module.
            for off, target in self.target(code, m.end(), base):
                src_unit = self.unit(mod) if mod else None
                dst_unit = self.unit(target) if target else None
                if src_unit == dst_unit:
                    continue
                if dst_unit is None:
                    dst_key = ROOT
                else:
                    dst_key = dst_unit
                src_key = ROOT if src_unit is None else src_unit
                site = (rel, line_of(off))
                sites = self.edges.setdefault((src_key, dst_key), [])
                if site not in sites:
                    sites.append(site)

    def key_layer(self, key):
        return len(LAYERS) if key == ROOT else self.layer(key)


# Crates below `metron`, each with the crates above it that it must never depend on or name
# (Cargo refuses a cycle, but not a new edge that turns the layering upside down).
BELOW = [
    ("core", "metron-core", ["metron", "metron-sinks"]),
    ("sinks", "metron-sinks", ["metron"]),
]


def below_uses_above(crate, name, above):
    """`name` (the crate at `crate`) must not depend on the crates in `above` nor name them in
    code other than comments."""
    bad = []
    manifest = os.path.join(crate, "Cargo.toml")
    with open(manifest, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            for up in above:
                if re.match(rf"\s*{re.escape(up)}\s*(\.workspace)?\s*=", line):
                    bad.append(f"{manifest}:{n}: {name} depends on `{up}`, a crate above it")
    for d, _, fs in os.walk(os.path.join(crate, "src")):
        for fname in sorted(fs):
            if not fname.endswith(".rs"):
                continue
            path = os.path.join(d, fname)
            with open(path, encoding="utf-8") as f:
                code = strip(f.read())
            for n, line in enumerate(code.split("\n"), 1):
                for up in above:
                    ident = up.replace("-", "_")
                    if re.search(rf"(?<![\w:]){ident}::", line):
                        bad.append(f"{path}:{n}: {name} names `{ident}`, a crate above it")
    return bad


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(os.path.dirname(here), "sdk", "src")
    verbose = False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--src" and args:
            src = args.pop(0)
        elif a == "--verbose":
            verbose = True
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    if not os.path.isfile(os.path.join(src, "lib.rs")):
        print(f"check-layers: {src} has no lib.rs (pass the crate's src folder with --src)", file=sys.stderr)
        return 2
    files = sorted(
        os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".rs")
    )
    skip = test_files(src, files)
    g = Graph(src)
    for f in files:
        if os.path.normpath(f) not in skip:
            g.scan(f)

    repo = os.path.dirname(os.path.dirname(src))
    for folder, name, above in BELOW:
        crate = os.path.join(repo, folder)
        if os.path.isfile(os.path.join(crate, "Cargo.toml")):
            bad = below_uses_above(crate, name, above)
            for line in bad:
                print(line)
            if bad:
                return 1

    if g.unplaced:
        for u in sorted(g.unplaced):
            print(f"check-layers: module `{u}` is in no layer: add it to LAYERS in {os.path.relpath(__file__)}")
        return 1

    members = {}
    for f in files:
        mod = module_of_file(src, f)
        if mod:
            members.setdefault(g.unit(mod), None)
    print("Layers (lowest first):")
    for idx, (name, desc, mods) in enumerate(LAYERS):
        print(f"  {idx}. {name}: {', '.join(mods)}  ({desc})")
    print(f"  {len(LAYERS)}. {ROOT}: lib.rs (the public facade)")

    upward_ok, upward_bad, stale = [], [], []
    for (a, b), sites in sorted(g.edges.items()):
        la, lb = g.key_layer(a), g.key_layer(b)
        if verbose:
            arrow = "UP " if lb > la else "   "
            print(f"  {arrow}{a} ({g.layer_name(la)}) -> {b} ({g.layer_name(lb)}): {len(sites)} uses")
        if lb > la:
            if (a, b) in ALLOWED:
                upward_ok.append((a, b))
            else:
                upward_bad.append((a, b, la, lb, sites))
    present = set(members) | {ROOT}
    for pair in ALLOWED:
        if not (pair[0] in present and pair[1] in present):
            continue  # a tree without these modules (a test fixture)
        if pair not in g.edges or g.key_layer(pair[1]) <= g.key_layer(pair[0]):
            stale.append(pair)

    for a, b, la, lb, sites in upward_bad:
        for f, line in sites:
            print(f"{f}:{line}: module {a} (layer {g.layer_name(la)}) imports module {b} (layer {g.layer_name(lb)}, higher)")
    for a, b in stale:
        print(f"check-layers: allowlist entry ({a} -> {b}) is no longer an upward import: remove it from ALLOWED")
    n_modules = len(members)
    print(
        f"Summary: {n_modules} modules in {len(LAYERS)} layers, {len(g.edges)} module-to-module imports, "
        f"{len(upward_ok) + len(upward_bad)} upward: {len(upward_ok)} allowed, {len(upward_bad)} forbidden"
    )
    return 1 if upward_bad or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
