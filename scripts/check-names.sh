#!/usr/bin/env bash
# The repository speaks of the product, not of how it was made: no text in the docs, tests,
# scripts, CI or any crate names a tracker issue, a work stop or a round by number, and no file
# under tests/ is named after one. What a check guards belongs in its name and its comments.
#
# Usage: scripts/check-names.sh      (exit 1, listing each offending line or file, when one is found)
set -euo pipefail
cd "$(dirname "$0")/.."

# Every workspace member (the [workspace] members list) and the crates kept outside it.
crates=$(python3 - <<'PY'
import tomllib
with open("Cargo.toml", "rb") as f:
    ws = tomllib.load(f)["workspace"]
print(" ".join(ws["members"] + ws.get("exclude", [])))
PY
)
# shellcheck disable=SC2086
paths=(docs tests scripts .ci README.md $crates)
status=0

# Written as three alternatives so that this file does not match itself.
pattern='(issue|stop|round) ?[0-9]+'
if hits=$(grep -rniE --exclude-dir=target --exclude-dir=book --exclude-dir=artifacts --exclude-dir=corpus \
    "$pattern" "${paths[@]}" 2>/dev/null); then
  echo "check-names: text that names an issue, stop or round by number (say what it is instead):" >&2
  echo "$hits" >&2
  status=1
fi
if files=$(find tests -path '*/target' -prune -o -type f -print | grep -iE '/[^/]*(issue|stop|round)_?[0-9]+[^/]*$'); then
  echo "check-names: files under tests/ named after an issue, stop or round (name them by what they check):" >&2
  echo "$files" >&2
  status=1
fi
[ $status -eq 0 ] && echo "check-names: no issue, stop or round numbers in docs, tests, scripts, CI or the crates"
exit $status
