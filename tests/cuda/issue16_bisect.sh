B=$PWD/device-bin/i16; export PATH=$B:/usr/local/cuda/bin:$PATH; R=/tmp/r16b; rm -rf $R; mkdir -p $R
for v in "METRON_GPU_PM_SAMPLING=dramc__read_throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed" "METRON_GPU_PM_SAMPLING=dramc__read_throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed X=1" "METRON_GPU_PM_SAMPLING=dramc__read_throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed X=2" "METRON_GPU_PM_SAMPLING=sm__inst_executed_realtime.avg.pct_of_peak_sustained_elapsed" ; do
  n=v$RANDOM; echo "== $v $(date -u +%T)"
  env $( [ "$v" = base ] || echo $v ) METRON_GPU_PM_INTERVAL=20000 METRON_GPU_PM_DEBUG=1 METRON_OUTPUT_PATH=$R/$n timeout 60 $B/metron run --library $B/libmetron.so -- $B/pm_mix 3 3000 > $R/$n.log 2> $R/$n.err; echo "rc=$?"
  grep -v "^metron: pm sampling: decode: calling" $R/$n.err | tail -12; python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get(\"died\"))" $R/$n/summary.json 2>&1 | cut -c1-1500
  python3 -c "import json,sys; m=json.load(open(sys.argv[1])).get('gpu_pm_sampling') or {}; print({k:m.get(k) for k in ['counts','notes','samples','summary']} )" $R/$n/metadata.json 2>&1 | cut -c1-600
done
