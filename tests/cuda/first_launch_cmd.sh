# Sourced by the first-launch checks (first_launch_all.sh, scripts/gpu-validate.sh):
# first_launch_cmd FEATURE prints the command that runs ./first_launch with that GPU feature on
# (M: the `metron run ... --` prefix).
first_launch_cmd() {
  case $1 in
    none) echo "./first_launch" ;;
    default) echo "$M ./first_launch" ;;
    pc) echo "env METRON_GPU_PC_SAMPLING=on $M ./first_launch" ;;
    pm) echo "env METRON_GPU_PM_SAMPLING=on $M ./first_launch" ;;
    kernel) echo "env METRON_GPU_METRICS=smsp__inst_executed.sum $M ./first_launch" ;;
    region) echo "env METRON_GPU_METRICS=smsp__inst_executed.sum METRON_GPU_COUNTER_MODE=region $M ./first_launch" ;;
    nowarm) echo "env METRON_GPU_WARM_UP=0 $M ./first_launch" ;;
    cuptionly) echo "env METRON_GPU_DIAG=no_ts,no_cb,no_copy,no_tid METRON_GPU_WARM_UP=0 $M ./first_launch" ;;
    *) echo "first_launch_cmd: unknown feature $1" >&2; return 1 ;;
  esac
}
