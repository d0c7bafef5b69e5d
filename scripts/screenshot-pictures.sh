#!/usr/bin/env bash
# Opens a run folder's flamegraph.svg and report.html in headless Chromium (Debian's
# `chromium`, installed by scripts/install-deps.sh) and saves a screenshot of each, to check by
# eye that a large run's pictures open and read well. Not part of CI.
#
# Usage: scripts/screenshot-pictures.sh RUN_DIR [OUT_DIR]   (OUT_DIR defaults to RUN_DIR)
# Writes OUT_DIR/flamegraph.png and OUT_DIR/report.png, and prints how long each took.
set -euo pipefail
dir=${1:?usage: scripts/screenshot-pictures.sh RUN_DIR [OUT_DIR]}
out=${2:-$dir}
command -v chromium >/dev/null || { echo "chromium is missing: apt-get install chromium" >&2; exit 2; }
mkdir -p "$out"
for name in flamegraph.svg report.html; do
  [ -f "$dir/$name" ] || { echo "$dir/$name is missing" >&2; exit 1; }
  profile=$(mktemp -d)
  png="$out/${name%.*}.png"
  start=$(date +%s.%N)
  timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --window-size=1400,1000 --screenshot="$png" "file://$(realpath "$dir/$name")" >/dev/null 2>&1
  end=$(date +%s.%N)
  rm -rf "$profile"
  [ -s "$png" ] || { echo "no screenshot of $name" >&2; exit 1; }
  printf '%s: %s (%s bytes), %.2f s\n' "$name" "$png" "$(stat -c %s "$png")" "$(echo "$end - $start" | bc)"
done
