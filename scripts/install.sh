#!/usr/bin/env bash
# Installs Metron into a prefix, no root needed:
#   PREFIX/bin/metron                       the `metron` command (run, avail)
#   PREFIX/lib/libmetron.so, libmetron.a    the C API (libmetron.so is also the preload runtime)
#   PREFIX/include/metron/metron.h          the C header
#   PREFIX/lib/cmake/metron/                find_package(metron) -> metron::metron, metron::metron-static
#   PREFIX/lib/pkgconfig/metron.pc          pkg-config metron (and metron-static)
#
# Usage: scripts/install.sh [PREFIX]      (default: $HOME/.local)
# Then:  cmake -DCMAKE_PREFIX_PATH=PREFIX ...   or   PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
# Honours CARGO_TARGET_DIR; builds in release mode.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-${PREFIX:-$HOME/.local}}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
target=${CARGO_TARGET_DIR:-$root/target}

(cd "$root" && cargo build --release --quiet -p metron-user -p metron-cli)

version=$(sed -n 's/^#define METRON_VERSION_STRING "\(.*\)"/\1/p' "$root/user-api/include/metron/metron.h")
mkdir -p "$prefix/bin" "$prefix/lib/cmake/metron" "$prefix/lib/pkgconfig" "$prefix/include/metron"
install -m 755 "$target/release/metron" "$prefix/bin/metron"
install -m 755 "$target/release/libmetron.so" "$prefix/lib/libmetron.so"
install -m 644 "$target/release/libmetron.a" "$prefix/lib/libmetron.a"
install -m 644 "$root/user-api/include/metron/metron.h" "$prefix/include/metron/metron.h"
install -m 644 "$root/cmake/metron-config.cmake" "$root/cmake/metron-config-version.cmake" \
  "$prefix/lib/cmake/metron/"
for pc in metron metron-static; do
  sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" "$root/cmake/$pc.pc.in" \
    > "$prefix/lib/pkgconfig/$pc.pc"
done
echo "metron $version installed in $prefix"
echo "  CMake:      -DCMAKE_PREFIX_PATH=$prefix   then find_package(metron) and metron::metron"
echo "  pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs metron"
echo "  launcher:   $prefix/bin/metron run -- ./app"
