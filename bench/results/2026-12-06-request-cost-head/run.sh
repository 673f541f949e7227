for i in 1 2 3; do for d in /work/wt/base /work/main; do
  n=$(basename $d); cat /proc/loadavg > /tmp/rcab/$n-$i.load
  (cd $d && BENCH_MAX_WAIT_MS=1 timeout 600 npx tsx bench/request-cost.ts --repeats 2 --json > /tmp/rcab/$n-$i.json 2>/tmp/rcab/$n-$i.err)
done; done
echo done > /tmp/rcab/done
