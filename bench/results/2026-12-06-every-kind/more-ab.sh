#!/bin/bash
# As run for bench/README.md, "Every kind at the ceiling". The trees: i40 is the branch itself; i40-base is a
# worktree of bf8b242 and i40-main one of aeff443, each with this branch's bench/ files copied in (so the same
# benches measure both) and its own node_modules.
export NATS_SERVER_BIN=/root/.cache/leasehold/nats-server/nats-server BENCH_NO_LOAD_WAIT=1
out=/tmp/i40/ab
while [ ! -f $out/cost.done ]; do sleep 5; done
stamp() { echo "# $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)"; }
cd /work/wt/i40
for n in 1 2; do
  (stamp; npx tsx bench/proxies.ts --instances $n --concurrency 64 --repeats 1 --duration-ms 3000 --warmup-ms 1000 --systems leasehold) > $out/conf-proxies-i$n.txt 2>&1
  (stamp; npx tsx bench/routes.ts --instances $n --paths place --concurrency 64 --repeats 1 --duration-ms 3000 --warmup-ms 1000 --systems leasehold) > $out/conf-place-i$n.txt 2>&1
done
for round in 1 2; do
  for w in proxies place; do
    if [ $round = 1 ]; then order="main after"; else order="after main"; fi
    for tree in $order; do
      dir=/work/wt/i40; [ $tree = main ] && dir=/work/wt/i40-main
      (cd $dir && stamp > $out/costm-$w-$tree-$round.txt && npx tsx bench/request-cost.ts --workload $w --repeats 1 --duration-ms 5000 --warmup-ms 2000 >> $out/costm-$w-$tree-$round.txt 2>&1)
    done
  done
done
for tree in before after; do
  dir=/work/wt/i40; [ $tree = before ] && dir=/work/wt/i40-base
  cd $dir
  (stamp; npx tsx bench/proxies.ts --concurrency 64,1 --repeats 1 --duration-ms 3000 --warmup-ms 1000) > $out/ratio-proxies-$tree.txt 2>&1
  (stamp; npx tsx bench/routes.ts --paths place --concurrency 64,1 --repeats 1 --duration-ms 3000 --warmup-ms 1000) > $out/ratio-place-$tree.txt 2>&1
done
echo done > $out/more.done
