#!/usr/bin/env bash
# Before and after of the route rows, interleaved: 239acbc ("before", a checkout of it at
# $BEFORE sharing this checkout's node_modules) and e2c65e8 ("after", this checkout then).
# Usage: BEFORE=/tmp/routes-before bench/results/2026-12-02-route-verify-ab/run.sh
#   git worktree add /tmp/routes-before 239acbc && ln -s "$PWD/node_modules" /tmp/routes-before/node_modules
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
out=$here/bench/results/2026-12-02-route-verify-ab
export BENCH_NO_LOAD_WAIT=1
for round in 1 2 3; do
  for side in before after; do
    dir=$here; [ $side = before ] && dir=$BEFORE
    (cd "$dir" && npx tsx bench/all.ts --only routes --label "$side-$round" --results-dir "$out" --no-readme \
      -- --repeats 1 --duration-ms 3000 > "$out/$side-$round.txt" 2>&1)
    echo "$side $round done $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
