#!/bin/bash
# Interleaved before/after runs of the lock, proxy and route benches (ratios against the ceiling measured in each run).
out=/tmp/bench15; mkdir -p $out
for round in 1 2; do
  for tree in before after; do
    dir=/tmp/lh-15-after; [ $tree = before ] && dir=/tmp/lh-15-before
    cd $dir
    for b in "locks.ts --names cold" "proxies.ts --proxies 10" "routes.ts --hosts 8"; do
      name=$(echo $b | cut -d. -f1)
      timeout 600 node --import tsx bench/$b --repeats 1 --duration-ms 3000 --json > $out/$tree-$name-$round.json 2> $out/$tree-$name-$round.err
    done
  done
done
echo done > $out/DONE
