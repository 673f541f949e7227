#!/bin/bash
# usage: BEFORE=<tree> AFTER=<tree> ab.sh <outdir> <rounds> <bench args...>
# Alternates the two trees (each a worktree with its own dist/), before then after, round by round.
out=$1; rounds=$2; shift 2
mkdir -p "$out"
export BENCH_NO_LOAD_WAIT=1
for r in $(seq 1 "$rounds"); do
  for t in before after; do
    d=$AFTER; [ $t = before ] && d=$BEFORE
    (cd "$d" && timeout 600 npx tsx "$@" > "$out/$t-$r.txt" 2>&1)
    echo "== $t round $r"; grep -E "^repeat" "$out/$t-$r.txt"
  done
done
