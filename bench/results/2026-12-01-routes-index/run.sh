#!/bin/bash
export BENCH_MAX_WAIT_MS=0
for i in 1 2; do
  for side in before after; do
    if [ $side = before ]; then dir=<worktree of 1dc8ffd with this bench/routes.ts>; else dir=<this tree>; fi
    echo "== $side $i $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)" >> /tmp/cmp.log
    (cd $dir && timeout 400 npx tsx bench/all.ts --only routes --no-readme --results-dir /tmp/res-$side-$i -- --repeats 2 --duration-ms 3000 > /tmp/cmp-$side-$i.out 2> /tmp/cmp-$side-$i.err)
    echo "rc $? $(date -u +%T)" >> /tmp/cmp.log
  done
done
echo done >> /tmp/cmp.log
