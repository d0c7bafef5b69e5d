#!/usr/bin/env python3
"""Checks the statements of docs/src/architecture.md that the code can answer:

- the crate diagram names every workspace crate (package name and folder) except the test,
  bench and example packages, and no other;
- every repository path the page names in backticks exists (a `*` matches as in a shell);
- the table of layers inside `metron` lists, row by row, the modules `scripts/check-layers.py`
  enforces;
- foreign declarations (`extern "C" { ... }`) are in `sys*.rs` files or in the files the
  **Foreign declarations.** paragraph names;
- `unsafe` blocks are in `sys*.rs` files or in the files and folders the **`unsafe`.**
  paragraph names, and each of those holds one.

Usage: scripts/check-architecture.py    (exit 1, printing each false statement, when one is found)
"""

import glob
import importlib.util
import os
import re
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PAGE = os.path.join(REPO, "docs", "src", "architecture.md")
NOT_IN_DIAGRAM = {"tests", "benches", "examples"}
UNSAFE_BLOCK = re.compile(r"\bunsafe\s*\{")
EXTERN_BLOCK = re.compile(r'\bextern\s+"C"\s*\{')
CODE = re.compile(r"`([^`\n]+)`")


def load_layers():
    spec = importlib.util.spec_from_file_location("check_layers", os.path.join(HERE, "check-layers.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def paragraph(text, marker):
    """The paragraph that starts with `marker` (up to the next blank line)."""
    start = text.find(marker)
    if start < 0:
        return None
    end = text.find("\n\n", start)
    return text[start: end if end >= 0 else len(text)]


def source_files():
    with open(os.path.join(REPO, "Cargo.toml"), "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    for member in members:
        if member in NOT_IN_DIAGRAM:
            continue  # the test, bench and example packages: support code, not the product
        for path in glob.glob(os.path.join(REPO, member, "src", "**", "*.rs"), recursive=True):
            yield os.path.relpath(path, REPO)


def strip_comments(text):
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def is_sys(path):
    return os.path.basename(path.rstrip("/")).startswith("sys")


def covered(path, entries):
    return any(path == e or (e.endswith("/") and path.startswith(e)) for e in entries)


def main():
    text = open(PAGE, encoding="utf-8").read()
    problems = []

    # The crates.
    with open(os.path.join(REPO, "Cargo.toml"), "rb") as f:
        members = tomllib.load(f)["workspace"]["members"]
    want = set()
    for member in members:
        if member in NOT_IN_DIAGRAM:
            continue
        with open(os.path.join(REPO, member, "Cargo.toml"), "rb") as f:
            want.add((tomllib.load(f)["package"]["name"], member))
    diagram = text.split("```text", 1)[1].split("```", 1)[0] if "```text" in text else ""
    shown = set(re.findall(r"(metron(?:-[a-z]+)*) \(([a-z-]+)/", diagram))
    for name, folder in sorted(want - shown):
        problems.append(f"the crate diagram lacks {name} ({folder}/)")
    for name, folder in sorted(shown - want):
        problems.append(f"the crate diagram shows {name} ({folder}/), which is not a workspace crate")

    # Every path named.
    top = {d for d in os.listdir(REPO) if not d.startswith(".")}
    # The circle table names files relative to their crate's src/, as import-cycles.py prints them.
    outside_circles = re.sub(r"\*\*Import circles\.\*\*.*?(?=\*\*`unsafe`\.\*\*)", "", text, flags=re.S)
    for token in sorted(set(CODE.findall(outside_circles))):
        path = token.split()[0].rstrip(",.;:")
        if "/" not in path or "<" in path or path.split("/")[0] not in top:
            continue
        if not glob.glob(os.path.join(REPO, path)):
            problems.append(f"the page names `{path}`, which does not exist")

    # The layers of `metron`.
    layers = load_layers().LAYERS
    table = text.split("| layer | modules | what |", 1)
    rows = []
    if len(table) == 2:
        for line in table[1].splitlines()[2:]:
            if not line.startswith("|"):
                break
            cells = line.split(" | ")
            rows.append({m for m in CODE.findall(cells[1]) if "-" not in m})
    if len(rows) != len(layers):
        problems.append(f"the layer table has {len(rows)} rows, scripts/check-layers.py {len(layers)} layers")
    for (name, _, modules), listed in zip(layers, rows):
        if set(modules) != listed:
            problems.append(f"layer {name}: the page lists {sorted(listed)}, scripts/check-layers.py "
                            f"{sorted(modules)}")

    # Foreign declarations and `unsafe`.
    files = {}
    for path in source_files():
        with open(os.path.join(REPO, path), encoding="utf-8") as f:
            files[path] = strip_comments(f.read())
    for marker, pattern, what in (
        ("**Foreign declarations.**", EXTERN_BLOCK, '`extern "C"` block'),
        ("**`unsafe`.**", UNSAFE_BLOCK, "`unsafe` block"),
    ):
        para = paragraph(text, marker)
        if para is None:
            problems.append(f"the page has no {marker} paragraph")
            continue
        # The files and folders named as holders: paths into a crate's src/ other than sys*.rs.
        entries = [t for t in CODE.findall(para) if "/src/" in t and "*" not in t and not is_sys(t)]
        holders = sorted(p for p, code in files.items() if not is_sys(p) and pattern.search(code))
        for path in holders:
            if not covered(path, entries):
                problems.append(f"{path} has an {what} outside a sys*.rs file and is not in the {marker} paragraph")
        for entry in entries:
            if not any(covered(p, [entry]) for p in holders):
                problems.append(f"the {marker} paragraph names `{entry}`, which has none of {what}s (outside sys*.rs)")

    for p in problems:
        print(f"check-architecture: {p}", file=sys.stderr)
    if not problems:
        print("check-architecture: docs/src/architecture.md agrees with the code")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
