# Sourced by the toggle plans (toggle_no_ts.sh, toggle_ab.sh): in a fresh folder R, says when and
# on which GPU, and builds metron_toggle (Metron's collection switched off and on between rounds)
# and cupti_toggle (CUPTI's floor, step by step). Needs T (tests/cuda) and R set.
rm -rf "$R"; mkdir -p "$R"; cd "$R" || exit 1
export PATH=/usr/local/cuda/bin:$PATH
{ date -u; nvidia-smi -L; } 2>&1 | head -2
nvcc -O2 -arch=sm_90 -o metron_toggle "$T/metron_toggle.cu" -ldl &
nvcc -O2 -arch=sm_90 -o cupti_toggle "$T/cupti_toggle.cu" -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lcupti &
wait
