"""The suite's CUDA programs, built with the GPU machine's nvcc for the GPU it has.

All builds run at once; a program that fails to build is recorded with the compiler's last
lines, and only the checks that need it are marked ERROR.
"""

import os
import shutil
import subprocess

CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def nvcc():
    found = shutil.which("nvcc") or os.path.join(CUDA, "bin", "nvcc")
    return found if os.path.exists(found) else None


def gpu_arch():
    """sm_XY of GPU 0 (nvidia-smi's compute capability), sm_90 when it cannot be read."""
    try:
        cap = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.split()[0]
        major, minor = cap.split(".")
        return "sm_%s%s" % (major, minor)
    except (OSError, IndexError, ValueError, subprocess.TimeoutExpired):
        return "sm_90"


def recipes(src, arch):
    """name -> (nvcc arguments after `nvcc`, working folder); outputs go to the build folder."""
    cupti_libs = [p for p in (os.path.join(CUDA, "lib64"), os.path.join(CUDA, "extras", "CUPTI", "lib64"))
                  if os.path.isdir(p)]
    cupti = ["-I" + os.path.join(CUDA, "include")]
    for lib in cupti_libs:
        cupti += ["-L" + lib, "-Xlinker", "-rpath=" + lib]
    common = ["-O2", "-arch=" + arch]
    return {
        "mt_graph": (common + ["-lineinfo", os.path.join(src, "mt_graph.cu"), "-ldl", "-lpthread"], None),
        "pc_stalls": (common + ["-lineinfo", os.path.join(src, "pc_stalls.cu"), "-ldl"], None),
        # pc_inline_main.cu includes pc_inline.cu: built in its folder so the lines are that file's.
        "pc_inline": (common + ["-lineinfo", "pc_inline_main.cu"], src),
        "pc_inline.cubin": (["-cubin"] + common + ["-lineinfo", "pc_inline.cu"], src),
        "pm_mix": (common + [os.path.join(src, "pm_mix.cu"), "-ldl"], None),
        "first_launch": (common + [os.path.join(src, "first_launch.cu"), "-ldl"], None),
        "whatif_steps": (common + [os.path.join(src, "whatif_steps.cu"), "-ldl"], None),
        "metron_toggle": (common + [os.path.join(src, "metron_toggle.cu"), "-ldl"], None),
        "cupti_toggle": (common + [os.path.join(src, "cupti_toggle.cu")] + cupti + ["-lcupti"], None),
    }


def build_all(suite):
    """Builds every program into WORK/bin; fills suite.programs and suite.build_errors."""
    compiler = nvcc()
    out_dir = os.path.join(suite.work, "bin")
    os.makedirs(out_dir, exist_ok=True)
    arch = gpu_arch()
    todo = recipes(suite.cuda_tests, arch)
    if compiler is None:
        for name in todo:
            suite.build_errors[name] = "no nvcc on PATH or in %s/bin" % CUDA
        return
    suite.log("building %d programs with %s for %s" % (len(todo), compiler, arch))
    running = {}
    for name, (args, cwd) in todo.items():
        target = os.path.join(out_dir, name)
        log = open(os.path.join(suite.work, "logs", "build-%s.txt" % name), "w")
        try:
            proc = subprocess.Popen([compiler, "-o", target] + args, cwd=cwd or suite.work,
                                    stdout=log, stderr=subprocess.STDOUT)
        except OSError as e:
            log.close()
            suite.build_errors[name] = str(e)
            continue
        running[name] = (proc, target, log)
    for name, (proc, target, log) in running.items():
        try:
            rc = proc.wait(timeout=max(10, min(240, suite.left())))
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = -1
        log.close()
        if rc == 0 and os.path.exists(target):
            suite.programs[name] = target
        else:
            text = open(log.name, encoding="utf-8", errors="replace").read().strip().splitlines()
            suite.build_errors[name] = ("rc=%d: " % rc) + (text[-1] if text else "")
    suite.log("built: %s; failed: %s" % (sorted(suite.programs), sorted(suite.build_errors)))
