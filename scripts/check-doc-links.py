#!/usr/bin/env python3
"""Checks the links of the user guide and of the README; exits 1 on a broken one.

Usage: scripts/check-doc-links.py [BOOK_DIR]     (default: docs/book, built by `mdbook build docs`)

- The built book: every relative `href`/`src` of every chapter page (one HTML file per
  docs/src/*.md, as mdBook renders it) must name a file of the book, and its `#anchor` an `id`
  on that page. Links that leave the book (`../../sdk/...`) are broken there: name a source
  file as `code`, or link its repository page with a full URL.
- README.md and docs/gpu-validation.md (not part of the book): every
  relative link must name a file of the repository; a link into docs/src/X.md#anchor must name
  an `id` of the built page X.html, a `#anchor` alone a heading of the same file.
Each broken link is printed as `FILE: link (why)`. External links (http, https, mailto) are
not fetched: CI has no network.
"""
import html.parser
import os
import re
import sys
import urllib.parse

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SRC = os.path.join(ROOT, "docs", "src")


class Page(html.parser.HTMLParser):
    """The ids and the links of one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif (name == "href" and tag == "a") or (name == "src" and tag == "img"):
                self.links.append(value)


_pages = {}


def page(path):
    if path not in _pages:
        p = Page()
        with open(path, encoding="utf-8") as f:
            p.feed(f.read())
        _pages[path] = p
    return _pages[path]


def external(link):
    return re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", link) is not None


def check_target(base_dir, link, inside, where, errors, md_to_html=None, label=None):
    """Resolves `link` from `base_dir`; the file must exist under `inside`, the anchor on it."""
    label = label or rel(where)
    path, _, anchor = link.partition("#")
    path = urllib.parse.unquote(path)
    anchor = urllib.parse.unquote(anchor)
    target = os.path.normpath(os.path.join(base_dir, path)) if path else where
    if not (target == inside or target.startswith(inside + os.sep)):
        errors.append(f"{label}: {link} (leaves {rel(inside)}/)")
        return
    if md_to_html:
        target = md_to_html(target)
    if os.path.isdir(target):
        target = os.path.join(target, "index.html")
    if not os.path.exists(target):
        errors.append(f"{label}: {link} (no file {rel(target)})")
        return
    if anchor:
        if not target.endswith(".html"):
            errors.append(f"{label}: {link} (an anchor into {rel(target)}, not a page)")
        elif anchor not in page(target).ids:
            errors.append(f"{label}: {link} (no id {anchor!r} on {rel(target)})")


def rel(path):
    return os.path.relpath(path, ROOT)


def chapters():
    """The chapter files named in SUMMARY.md, relative to docs/src."""
    with open(os.path.join(SRC, "SUMMARY.md"), encoding="utf-8") as f:
        return re.findall(r"\]\(([^)#\s]+\.md)\)", f.read())


def markdown_links(text):
    """Inline links and images outside code: (target)."""
    text = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [m.group(1) for m in re.finditer(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)]


def github_ids(text):
    """The anchors GitHub gives the headings of a Markdown file."""
    text = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)
    ids, seen = set(), {}
    for m in re.finditer(r"^#+ (.*)$", text, flags=re.M):
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).replace("`", "")
        slug = "".join(c.lower() if c.isalnum() or c in "_-" else "-" if c.isspace() else "" for c in title)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else f"{slug}-{n}")
    return ids


def main():
    book = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "book")
    if not os.path.exists(os.path.join(book, "index.html")):
        sys.exit(f"check-doc-links: {rel(book)}/index.html not found: run `mdbook build docs` first")
    errors = []
    names = chapters()
    for md in names:
        if not os.path.exists(os.path.join(SRC, md)):
            errors.append(f"docs/src/SUMMARY.md: {md} (no file docs/src/{md})")
            continue
        html_path = os.path.join(book, md[:-3] + ".html")
        if not os.path.exists(html_path):
            errors.append(f"docs/src/{md}: not rendered ({rel(html_path)} missing)")
            continue
        for link in page(html_path).links:
            if external(link) or link == "#":
                continue
            check_target(os.path.dirname(html_path), link, book, html_path, errors,
                         label=f"docs/src/{md} (as {rel(html_path)})")
    # README.md and the Markdown kept outside the book (docs/gpu-validation.md):
    # repository paths relative to the file, anchors into the built chapters.
    def to_html(target):
        if target.startswith(SRC + os.sep) and os.path.relpath(target, SRC) in names:
            return os.path.join(book, os.path.relpath(target, SRC)[:-3] + ".html")
        return target

    outside = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "docs", "gpu-validation.md")]
    validation = os.path.join(ROOT, "docs", "validation")
    if os.path.isdir(validation):
        outside += sorted(os.path.join(validation, f) for f in os.listdir(validation) if f.endswith(".md"))
    for md_path in outside:
        if not os.path.exists(md_path):
            continue
        with open(md_path, encoding="utf-8") as f:
            text = f.read()
        base = os.path.dirname(md_path)
        for link in markdown_links(text):
            if external(link):
                continue
            if link.startswith("#"):
                if link[1:] not in github_ids(text):
                    errors.append(f"{rel(md_path)}: {link} (no such section in {rel(md_path)})")
                continue
            path = link.partition("#")[0]
            target = os.path.normpath(os.path.join(base, urllib.parse.unquote(path)))
            if not os.path.exists(target):
                errors.append(f"{rel(md_path)}: {link} (no file {rel(target)})")
                continue
            if "#" in link or target.startswith(SRC + os.sep):
                check_target(base, link, ROOT, md_path, errors, md_to_html=to_html)
    checked = len(names) + len([m for m in outside if os.path.exists(m)])
    errors = list(dict.fromkeys(errors))
    if errors:
        print(f"check-doc-links: {len(errors)} broken link(s):", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        sys.exit(1)
    print(f"check-doc-links: {checked} files, every internal link resolves")


if __name__ == "__main__":
    main()
