#!/usr/bin/env python3
"""Checks that no Rust source file holds more than 1,000 lines of code (one concept per file).

A line of code is a line that is neither blank nor only a comment (`//`, `///`, `//!`, or inside
a `/* ... */` block). Every `.rs` file of the repository is counted, build outputs left out.
Files listed in `scripts/known-exceptions.toml` ([file_size], work under way elsewhere) may be
larger; an exception whose file is no longer too large fails too (remove it there).

Usage: scripts/check-file-size.py [--list N]   (--list: print the N largest files and exit 0)
Exit status 1 when a file is too large, with each file and its count.
"""

import os
import sys
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
LIMIT = 1000
SKIP_DIRS = {"target", ".git", "book", "node_modules"}


def lines_of_code(text):
    """Lines that are not blank and not only comment. String literals that hold comment
    markers are rare enough in this repository to be counted as they look."""
    count, in_block = 0, False
    for line in text.splitlines():
        s = line.strip()
        if in_block:
            if "*/" in s:
                in_block = False
                s = s.split("*/", 1)[1].strip()
            else:
                continue
        if s.startswith("/*"):
            if "*/" not in s:
                in_block = True
                continue
            s = s.split("*/", 1)[1].strip()
        if not s or s.startswith("//"):
            continue
        count += 1
    return count


def rust_files():
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]
        for name in files:
            if name.endswith(".rs"):
                yield os.path.join(root, name)


def main(argv):
    sizes = []
    for path in rust_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            sizes.append((lines_of_code(f.read()), os.path.relpath(path, REPO)))
    sizes.sort(reverse=True)
    if argv[:1] == ["--list"]:
        for n, path in sizes[: int(argv[1]) if len(argv) > 1 else 20]:
            print(f"{n:6d} {path}")
        return 0
    with open(os.path.join(HERE, "known-exceptions.toml"), "rb") as f:
        known = set(tomllib.load(f).get("file_size", {}).get("files", []))
    too_large = [(n, p) for n, p in sizes if n > LIMIT and p not in known]
    stale = sorted(p for p in known if not any(q == p and n > LIMIT for n, q in sizes))
    for n, p in too_large:
        print(f"check-file-size: {p}: {n} lines of code (at most {LIMIT}: split it by concept)", file=sys.stderr)
    for p in stale:
        print(f"check-file-size: scripts/known-exceptions.toml lists {p}, which is no longer over "
              f"{LIMIT} lines of code (remove it there)", file=sys.stderr)
    if not too_large and not stale:
        n, largest = next((n, p) for n, p in sizes if p not in known)
        print(f"check-file-size: every Rust file holds at most {LIMIT} lines of code "
              f"({len(sizes)} files, {len(known)} known exceptions; the largest other: {largest}, {n})")
    return 1 if too_large or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
