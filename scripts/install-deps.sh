#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain. Idempotent: fast when done.
set -euo pipefail
need_apt=()
command -v valgrind >/dev/null || need_apt+=(valgrind)
# The C API tests: CMake and pkg-config builds of examples/c and examples/cpp, nm, make.
command -v cmake >/dev/null || need_apt+=(cmake)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
command -v nm >/dev/null || need_apt+=(binutils)
command -v make >/dev/null || need_apt+=(make)
command -v c++ >/dev/null || need_apt+=(g++)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "scripts/install-deps.sh: missing ${need_apt[*]}; install them (apt-get install ${need_apt[*]})" >&2
  fi
fi
# The Perfetto trace tests decode trace.pftrace with the official protos of the `perfetto`
# PyPI package (tests/perfetto/validate_trace.py). perfetto-sdk-sys builds with g++ (above).
if ! python3 -c "import perfetto.protos.perfetto.trace.perfetto_trace_pb2" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check perfetto protobuf
fi
