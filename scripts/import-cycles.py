#!/usr/bin/env python3
"""Lists the import circles between the files of each crate.

A circle is a set of files (modules) of one crate that all reach each other through
`crate::`/`super::` paths (a strongly connected component of the file import graph, unit tests
excluded): none of them can be read, tested or moved without the others. The path parsing is
`scripts/check-layers.py`'s. Circles inside one concept (a module and its own submodules
calling back, e.g. a parser and its error type) are normal; a circle spanning several concepts
is a design smell. The crate root (`lib.rs`, `main.rs`) is left out: it is the facade, and `docs/src/architecture.md` lists those that remain with the reason.

Usage: scripts/import-cycles.py [--check] [CRATE_DIR...]   (default: every workspace member with a src/)
Prints each circle of more than one file as `crate: a.rs, b.rs, ...`; exit status 0.

With --check (what CI runs): exit status 1 when a circle spans 5 files or more, unless
`scripts/known-exceptions.toml` lists it exactly (work under way elsewhere), or when that list
names a circle that is gone (remove it there).
"""

import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
_spec = importlib.util.spec_from_file_location("check_layers", os.path.join(HERE, "check-layers.py"))
layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layers)


def file_graph(src):
    """Edges between the files of the crate at `src`: file -> set of files."""
    files = sorted(
        os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".rs")
    )
    skip = layers.test_files(src, files)
    # The crate root is the facade: it re-exports everything and what names a root item
    # (a macro, a re-export) does not depend on the other modules through it.
    files = [
        f
        for f in files
        if os.path.normpath(f) not in skip and os.path.relpath(f, src) not in ("lib.rs", "main.rs")
    ]
    by_module = {tuple(layers.module_of_file(src, f)): f for f in files}
    g = layers.Graph(src)
    edges = {f: set() for f in files}
    for f in files:
        code = layers.strip(open(f, encoding="utf-8").read())
        file_mod = layers.module_of_file(src, f)
        scope_list = layers.scopes(code, file_mod)
        for m in layers.PATH_START.finditer(code):
            _, _, mod, is_test = layers.scope_at(scope_list, m.start())
            if is_test:
                continue
            kind = m.group(1)
            base = [] if kind in ("crate", "$crate") else (mod[:-1] if kind == "super" else list(mod))
            for _, target in g.target(code, m.end(), base):
                for k in range(len(target), -1, -1):
                    hit = by_module.get(tuple(target[:k]))
                    if hit:
                        if hit != f:
                            edges[f].add(hit)
                        break
    return edges


def circles(edges):
    """Strongly connected components with more than one file (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def members():
    text = open(os.path.join(REPO, "Cargo.toml"), encoding="utf-8").read()
    m = re.search(r"members\s*=\s*\[([^\]]*)\]", text)
    return [s.strip().strip('"') for s in m.group(1).split(",") if s.strip()]


# A circle this large spans several concepts: the files cannot be read, tested or moved apart.
TOO_LARGE = 5


def known_circles():
    """The circles scripts/known-exceptions.toml lets stand: crate -> [sorted file lists]."""
    import tomllib

    with open(os.path.join(HERE, "known-exceptions.toml"), "rb") as f:
        table = tomllib.load(f).get("import_cycles", {})
    out = {}
    for crate, files in table.items():
        lists = files if files and isinstance(files[0], list) else [files]
        out[crate] = [sorted(files) for files in lists]
    return out


def main(argv):
    check = "--check" in argv
    crates = [a for a in argv if a != "--check"] or members()
    known = known_circles() if check else {}
    too_large, seen = [], set()
    for crate in crates:
        src = os.path.join(REPO, crate, "src")
        if not os.path.isfile(os.path.join(src, "lib.rs")) and not os.path.isfile(os.path.join(src, "main.rs")):
            continue
        for comp in circles(file_graph(src)):
            files = [os.path.relpath(f, src) for f in comp]
            print(f"{crate}: {', '.join(files)}")
            if sorted(files) in known.get(crate, []):
                seen.add((crate, tuple(sorted(files))))
            elif len(files) >= TOO_LARGE:
                too_large.append(f"{crate}: {', '.join(files)}")
    if not check:
        return 0
    stale = [f"{crate}: {', '.join(files)}" for crate, lists in known.items() if crate in crates for files in lists
             if (crate, tuple(files)) not in seen]
    for line in too_large:
        print(f"import-cycles: a circle of {TOO_LARGE} files or more (give the imports one direction: "
              f"what both sides need moves down): {line}", file=sys.stderr)
    for line in stale:
        print(f"import-cycles: scripts/known-exceptions.toml lists a circle that is gone (remove it): {line}",
              file=sys.stderr)
    return 1 if too_large or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
