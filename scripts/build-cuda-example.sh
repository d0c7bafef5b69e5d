#!/usr/bin/env bash
# Builds examples/cuda with CMake find_package(metron) + nvcc, on a machine with or without a
# GPU: nvcc comes from /usr/local/cuda if present, else from NVIDIA's pip wheels
# (scripts/cuda-toolchain.sh or $METRON_CUDA_TOOLCHAIN, cached in ~/.cache/metron-cuda),
# or $METRON_CUDA_ROOT when such a toolchain is already unpacked.
#
#   scripts/build-cuda-example.sh [BUILD_DIR]     (default: target/cuda-example)
# Prints the built binary's path on its last line. Honours CARGO_TARGET_DIR.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/target/cuda-example}
mkdir -p "$build"
build=$(cd "$build" && pwd)
if [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda=/usr/local/cuda
elif [ -n "${METRON_CUDA_ROOT:-}" ] && [ -x "$METRON_CUDA_ROOT/bin/nvcc" ]; then
  # A toolchain already unpacked (e.g. ~/.cache/metron-cuda/nvidia/cu13).
  cuda=$METRON_CUDA_ROOT
else
  toolchain=${METRON_CUDA_TOOLCHAIN:-$root/scripts/cuda-toolchain.sh}
  [ -x "$toolchain" ] || [ -f "$toolchain" ] || { echo "no nvcc and no $toolchain" >&2; exit 3; }
  cuda=$(bash "$toolchain" | tail -n 1)
fi
"$root/scripts/install.sh" "$build/prefix" >&2
# The pip layout has no libcuda stub and keeps cudart in lib/: point CMake at it directly.
cmake -S "$root/examples/cuda" -B "$build/cmake" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$build/prefix" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" \
  -DCUDAToolkit_ROOT="$cuda" >&2
cmake --build "$build/cmake" -j2 >&2
echo "$build/cmake/vector_ops"
