#!/usr/bin/env bash
# A copy of the team tool ../shared/tools/cuda-toolchain.sh, kept in the repository so CI and
# fresh clones can compile the CUDA example without the shared folder.
# Unpacks nvcc 13.0, the CUDA runtime, the CUPTI headers/libraries and the NVTX v3 headers from NVIDIA's pip wheels,
# so CUDA code can be compiled on a machine with no GPU and no CUDA install.
# Versions match the GPU machine (driver 580, CUDA 13.0).
#
#   usage: cuda-toolchain.sh [DIR]      (default DIR: ${XDG_CACHE_HOME:-$HOME/.cache}/metron-cuda)
#   prints the CUDA root on its last line: $ROOT/bin/nvcc, $ROOT/include/cupti*.h, $ROOT/lib/libcupti.so.13
#
# There is no libcuda stub in these wheels: do not link -lcuda; get driver entry points at run
# time (dlopen("libcuda.so.1") or cudaGetDriverEntryPointByVersion).
set -euo pipefail
DIR=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/metron-cuda}
ROOT=$DIR/nvidia/cu13
if [ ! -x "$ROOT/bin/nvcc" ] || [ ! -f "$ROOT/include/cupti_range_profiler.h" ] || [ ! -d "$ROOT/include/nvtx3" ]; then
  mkdir -p "$DIR/wheels"
  python3 -m pip download --no-deps -q -d "$DIR/wheels" \
    nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 \
    nvidia-cuda-cccl==13.0.85 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85 \
    nvidia-nvtx==13.0.85 >&2
  command -v unzip >/dev/null || python3 - "$DIR" <<'PY'
import sys, zipfile, glob, os
d = sys.argv[1]
for w in glob.glob(os.path.join(d, "wheels", "*.whl")):
    with zipfile.ZipFile(w) as z:
        for n in z.namelist():
            if n.startswith("nvidia/"):
                z.extract(n, d)
PY
  if command -v unzip >/dev/null; then
    for w in "$DIR"/wheels/*.whl; do (cd "$DIR" && unzip -q -o "$w" 'nvidia/*'); done
  fi
  chmod +x "$ROOT"/bin/* "$ROOT"/nvvm/bin/* 2>/dev/null || true
  ln -sfn lib "$ROOT/lib64"   # nvcc.profile looks in lib64/
fi
echo "$ROOT"
