#!/bin/bash
# As run for bench/README.md, "Every kind at the ceiling". The trees: i40 is the branch itself; i40-base is a
# worktree of bf8b242 and i40-main one of aeff443, each with this branch's bench/ files copied in (so the same
# benches measure both) and its own node_modules.
# Interleaved before/after of bench/request-cost.ts for proxy pairs and new placements.
export NATS_SERVER_BIN=/root/.cache/leasehold/nats-server/nats-server BENCH_NO_LOAD_WAIT=1
out=/tmp/i40/ab
for round in 1 2; do
  for w in proxies place; do
    if [ $round = 1 ]; then order="before after"; else order="after before"; fi
    for tree in $order; do
      dir=/work/wt/i40; [ $tree = before ] && dir=/work/wt/i40-base
      (cd $dir && echo "# $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" > $out/cost-$w-$tree-$round.txt && npx tsx bench/request-cost.ts --workload $w --repeats 1 --duration-ms 5000 --warmup-ms 2000 >> $out/cost-$w-$tree-$round.txt 2>&1)
    done
  done
done
echo done > $out/cost.done
