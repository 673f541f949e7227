#!/bin/bash
# usage: ab.sh <outdir> <rounds> <bench args...>: alternates before (ceiling-before) and after (ceiling) trees
out=$1; rounds=$2; shift 2
mkdir -p $out
export NATS_SERVER_BIN=/root/.cache/leasehold/nats-server/nats-server BENCH_NO_LOAD_WAIT=1
for r in $(seq 1 $rounds); do
  for t in before after; do
    d=/work/wt/ceiling; [ $t = before ] && d=/work/wt/ceiling-before
    (cd $d && timeout 600 npx tsx "$@" > $out/$t-$r.txt 2>&1)
    echo "== $t round $r"; grep -E "^repeat" $out/$t-$r.txt
  done
done
