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
# The HIP example test (tests/tests/gpu_hip_example.rs, skipped without hipcc): Debian's ROCm
# hipcc and HIP/HSA runtimes (bookworm and later), to compile examples/cuda/vector_ops.cu for an
# AMD GPU (gfx90a); no GPU is needed to compile. Not fatal where the distribution lacks them,
# and nothing to do where ROCm is installed in /opt/rocm.
need_hip=()
if [ ! -x /opt/rocm/bin/hipcc ]; then
  command -v hipcc >/dev/null || need_hip+=(hipcc)
  [ -f /usr/include/hip/hip_runtime.h ] || need_hip+=(libamdhip64-dev)
  [ -f /usr/include/hsa/hsa.h ] || need_hip+=(libhsa-runtime-dev)
fi
if [ ${#need_hip[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_hip[@]}" >/dev/null; } ||
      echo "scripts/install-deps.sh: could not install ${need_hip[*]}; the HIP example test will skip" >&2
  else
    echo "scripts/install-deps.sh: missing ${need_hip[*]} (apt-get install ${need_hip[*]}); the HIP example test will skip" >&2
  fi
fi
# The MPI test (tests/tests/mpi_merge.rs, skipped without mpicc/mpirun): Debian's Open MPI, to
# run 4 ranks under metron run and merge them. Not fatal where the distribution lacks it.
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null; } ||
      echo "scripts/install-deps.sh: could not install openmpi-bin libopenmpi-dev; the MPI test will skip" >&2
  else
    echo "scripts/install-deps.sh: missing Open MPI (apt-get install openmpi-bin libopenmpi-dev); the MPI test will skip" >&2
  fi
fi
# The causal-profiling test of Coz compatibility (tests/tests/causal.rs, skipped without
# /usr/include/coz.h) and tests/causal/compare-coz.sh: Debian's coz-profiler (coz.h, coz run).
# Not fatal where the distribution lacks it.
if [ ! -f /usr/include/coz.h ] || ! command -v coz >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq coz-profiler >/dev/null; } ||
      echo "scripts/install-deps.sh: could not install coz-profiler; the coz.h compatibility test will skip" >&2
  else
    echo "scripts/install-deps.sh: missing coz-profiler (apt-get install coz-profiler); the coz.h compatibility test will skip" >&2
  fi
fi
# The second oracle of the functions-as-regions tests (tests/tests/functions_uftrace.rs,
# skipped without it) and scripts/bench-functions.sh: Debian's uftrace.
if ! command -v uftrace >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq uftrace >/dev/null; } ||
      echo "scripts/install-deps.sh: could not install uftrace; the uftrace oracle test will skip" >&2
  else
    echo "scripts/install-deps.sh: missing uftrace (apt-get install uftrace); the uftrace oracle test will skip" >&2
  fi
fi
# The Clang build of the functions-as-regions known-answer program (its exceptions call no exit
# hook; tests/tests/functions_instrument.rs skips without it): Debian's clang-14.
if ! command -v clang-14 >/dev/null && ! command -v clang >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-14 >/dev/null; } ||
      echo "scripts/install-deps.sh: could not install clang-14; the Clang functions test will skip" >&2
  else
    echo "scripts/install-deps.sh: missing clang-14 (apt-get install clang-14); the Clang functions test will skip" >&2
  fi
fi
# GNU time measures a program's peak RSS in tests/tests/outputs_at_scale.rs (a child of the test
# would inherit the test's own high-water mark).
if [ ! -x /usr/bin/time ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null; } ||
    echo "scripts/install-deps.sh: could not install time; the peak RSS check will skip" >&2
fi
# The Perfetto trace tests decode trace.pftrace with the official protos of the `perfetto`
# PyPI package (tests/perfetto/validate_trace.py). perfetto-sdk-sys builds with g++ (above).
if ! python3 -c "import perfetto.protos.perfetto.trace.perfetto_trace_pb2" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check perfetto protobuf
fi
# The NVTX tests (tests/tests/nvtx_*.rs) compile C and C++ programs with the real, header-only
# NVTX v3 headers from NVIDIA's `nvidia-nvtx` wheel (150 KB, the version of the GPU machine),
# unpacked into ~/.cache/metron-nvtx; the tests look there (or in $METRON_NVTX_INCLUDE).
NVTX_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/metron-nvtx
if [ ! -f "$NVTX_DIR/nvidia/cu13/include/nvtx3/nvToolsExt.h" ]; then
  mkdir -p "$NVTX_DIR/wheels"
  python3 -m pip download --no-deps -q --disable-pip-version-check -d "$NVTX_DIR/wheels" nvidia-nvtx==13.0.85
  python3 - "$NVTX_DIR" <<'PY'
import glob, os, sys, zipfile
d = sys.argv[1]
for w in glob.glob(os.path.join(d, "wheels", "nvidia_nvtx-*.whl")):
    with zipfile.ZipFile(w) as z:
        z.extractall(d, [n for n in z.namelist() if n.startswith("nvidia/cu13/include/")])
PY
fi
# The pictures test (tests/tests/pictures.rs) opens report.html in headless Chromium (about
# 290 MB installed); without it the browser checks skip and say why.
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
      echo "scripts/install-deps.sh: could not install chromium; the pictures test's browser checks will skip" >&2
  else
    echo "scripts/install-deps.sh: missing chromium (apt-get install chromium); the pictures test's browser checks will skip" >&2
  fi
fi
# The GPU header test (tests/tests/gpu_headers.rs) checks Metron's CUPTI record layouts against
# cupti.h from NVIDIA's `nvidia-cuda-cupti` wheel (10 MB, the GPU machine's version) and the
# cuda.h and crt/ headers it includes (`nvidia-cuda-runtime`, `nvidia-cuda-crt`: 2 MB), headers only, unpacked into
# ~/.cache/metron-cupti (a few seconds).
CUPTI_DIR=${XDG_CACHE_HOME:-$HOME/.cache}/metron-cupti
if [ ! -f "$CUPTI_DIR/nvidia/cu13/include/cupti.h" ]; then
  mkdir -p "$CUPTI_DIR/wheels"
  python3 -m pip download --no-deps -q --disable-pip-version-check -d "$CUPTI_DIR/wheels" \
    nvidia-cuda-cupti==13.0.85 nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88
  python3 - "$CUPTI_DIR" <<'PY'
import glob, os, sys, zipfile
d = sys.argv[1]
for w in glob.glob(os.path.join(d, "wheels", "nvidia_cuda_*.whl")):
    with zipfile.ZipFile(w) as z:
        z.extractall(d, [n for n in z.namelist() if n.startswith("nvidia/cu13/include/")])
PY
fi
# The CUDA example (tests/tests/gpu_cuda_example.rs builds examples/cuda with CMake and nvcc):
# nvcc 13.0 and the CUDA runtime from NVIDIA's pip wheels (about 111 MB, once), unpacked into
# ~/.cache/metron-cuda by scripts/cuda-toolchain.sh. No GPU is needed to compile.
scripts_dir=$(cd "$(dirname "$0")" && pwd)
"$scripts_dir/cuda-toolchain.sh" >/dev/null
# The Python package (python/, tested by scripts/test-python.sh): maturin builds its wheel;
# python/bench/compare.py measures it next to PyPI's nvtx and viztracer.
if ! python3 -c "import maturin, nvtx, viztracer" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check maturin nvtx viztracer
fi
