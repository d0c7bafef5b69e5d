#!/usr/bin/env bash
# The GPU validation suite (docs/gpu-validation.md says what it checks and against what).
#
#   scripts/gpu-validate.sh --stage DIR        on the build machine: builds metron and libmetron.so
#                                              (release), strips them into DIR with the commit, and
#                                              downloads the wheels the trace checks need
#   scripts/gpu-validate.sh --from DIR --out OUT [--budget S] [--only NAME,...] [--python PY]
#                                              on the GPU machine (no Rust needed): builds the CUDA
#                                              programs, runs every check, prints the table, writes
#                                              OUT/gpu-validation.md, results.json, suite.log, runs.tgz
#
# DIR is relative to the repository's root unless absolute; `device-bin/` is ignored by git.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage

if [ "$1" = "--stage" ]; then
  dir=$2
  cargo build --release -p metron-cli -p metron-user
  mkdir -p "$dir"
  rm -f "$dir/metron" "$dir/libmetron.so"
  cp target/release/metron target/release/libmetron.so "$dir/"
  strip "$dir/metron" "$dir/libmetron.so"
  { git rev-parse --short HEAD; git diff --quiet HEAD -- . ':!device-bin' || echo "(with uncommitted changes)"; } |
    paste -sd' ' > "$dir/COMMIT"
  # The trace checks decode with Perfetto's protos: the versions this machine's tests use, as
  # pure-Python wheels (the GPU machine may have no network).
  rm -rf "$dir/wheels"
  versions=$(python3 -c 'import importlib.metadata as m; print(m.version("perfetto"), m.version("protobuf"))' 2>/dev/null || true)
  read -r perfetto protobuf <<< "${versions:-}"
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.12 --platform any -d "$dir/wheels" \
    "perfetto${perfetto:+==$perfetto}" "protobuf${protobuf:+==$protobuf}" ||
    echo "gpu-validate: could not download the perfetto/protobuf wheels: the trace checks will be skipped unless the GPU machine has them" >&2
  du -sh "$dir"
  echo "gpu-validate: staged $(cat "$dir/COMMIT") in $dir; on the GPU machine run:"
  echo "  scripts/gpu-validate.sh --from $dir --out \$OUT"
  exit 0
fi

exec python3 tests/cuda/suite/suite.py "$@"
