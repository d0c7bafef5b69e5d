#!/usr/bin/env bash
# Installs what the test suite needs beyond the Rust toolchain. Idempotent: fast when done.
set -euo pipefail
need_apt=()
command -v valgrind >/dev/null || need_apt+=(valgrind)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "scripts/install-deps.sh: missing ${need_apt[*]}; install them (apt-get install ${need_apt[*]})" >&2
  fi
fi
