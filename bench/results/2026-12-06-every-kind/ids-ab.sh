#!/bin/bash
# As run for bench/README.md: proxy pairs, aeff443 (main) against this tree with pooled ids, interleaved.
export NATS_SERVER_BIN=/root/.cache/leasehold/nats-server/nats-server BENCH_NO_LOAD_WAIT=1
out=/tmp/i40/ab
for round in 1 2 3; do
  if [ $round = 2 ]; then order="after main"; else order="main after"; fi
  for tree in $order; do
    dir=/work/wt/i40; [ $tree = main ] && dir=/work/wt/i40-main
    (cd $dir && echo "# $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" > $out/ids-proxies-$tree-$round.txt && npx tsx bench/request-cost.ts --workload proxies --repeats 1 --duration-ms 5000 --warmup-ms 2000 >> $out/ids-proxies-$tree-$round.txt 2>&1)
  done
done
