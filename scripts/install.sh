#!/usr/bin/env bash
# Installs Metron into a prefix, no root needed:
#   PREFIX/bin/metron                       the `metron` command (run, sample, causal, merge, report, export, avail)
#   PREFIX/lib/libmetron.so, libmetron.a    the C API (libmetron.so is also the preload runtime)
#   PREFIX/include/metron/metron.h          the C header
#   PREFIX/lib/cmake/metron/                find_package(metron) -> metron::metron, metron::metron-static
#   PREFIX/lib/pkgconfig/metron.pc          pkg-config metron (and metron-static)
#   PREFIX/lib/debug/                       the binaries' debug information (they are stripped)
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
# Binaries are installed stripped of their debug sections (the symbol tables stay, so
# backtraces and Metron's own symbolizer still name functions). The DWARF goes to
# PREFIX/lib/debug/<path>.debug (objcopy --only-keep-debug), which the binary names in its
# .gnu_debuglink (with a CRC), and PREFIX/lib/debug/.build-id/xx/yyyy.debug links to it, so
# gdb -iex 'set debug-file-directory PREFIX/lib/debug' finds it by build id. libmetron.a is
# stripped of debug sections only (an archive has no debug link).
strip_with_debug_file() { # SOURCE RELATIVE-PATH MODE
  local src=$1 rel=$2 mode=$3 dest=$prefix/$2 debug=$prefix/lib/debug/$2.debug tmp
  if ! command -v objcopy >/dev/null; then
    echo "scripts/install.sh: objcopy not found (binutils): installing $rel unstripped" >&2
    install -m "$mode" "$src" "$dest"
    return
  fi
  mkdir -p "$(dirname "$debug")"
  objcopy --only-keep-debug "$src" "$debug"
  chmod 644 "$debug"
  tmp=$(mktemp "$dest.XXXXXX")
  objcopy --strip-debug --add-gnu-debuglink="$debug" "$src" "$tmp"
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$dest"
  local id
  id=$(readelf -n "$dest" 2>/dev/null | sed -n 's/^ *Build ID: *\([0-9a-f]*\)$/\1/p' | head -1)
  if [ -n "$id" ]; then
    mkdir -p "$prefix/lib/debug/.build-id/${id:0:2}"
    ln -sfn "../../$rel.debug" "$prefix/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
  fi
}
mkdir -p "$prefix/lib/debug"
strip_with_debug_file "$target/release/metron" bin/metron 755
strip_with_debug_file "$target/release/libmetron.so" lib/libmetron.so 755
if command -v strip >/dev/null; then
  strip --strip-debug -o "$prefix/lib/libmetron.a" "$target/release/libmetron.a"
  chmod 644 "$prefix/lib/libmetron.a"
else
  install -m 644 "$target/release/libmetron.a" "$prefix/lib/libmetron.a"
fi
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
echo "  debugging:  gdb -iex 'set debug-file-directory $prefix/lib/debug' ..."
