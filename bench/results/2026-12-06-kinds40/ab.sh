#!/bin/bash
# usage: ab.sh <name> <rounds> <bench args...>: before40 then kinds40, alternating, one repeat each
export NATS_SERVER_BIN=/root/.cache/leasehold/nats-server/nats-server BENCH_NO_LOAD_WAIT=1
name=$1; rounds=$2; shift 2; out=bench/results/ab-$name; mkdir -p $out
for r in $(seq 1 $rounds); do
  for t in before40 kinds40; do
    (cd /work/wt/$t && echo "load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%H:%M:%S)" > $out/$t-$r.txt && timeout 600 npx tsx "$@" --repeats 1 >> $out/$t-$r.txt 2>&1)
  done
done
echo done > $out/done
