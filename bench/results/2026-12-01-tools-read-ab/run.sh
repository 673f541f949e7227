#!/bin/bash
# Before and after of the tools' read, interleaved: the session's start (37265e5, "before", a
# checkout of it at $BEFORE sharing this checkout's node_modules) and this checkout ("after").
# Rounds 1-2 ran first, then 3-4. Usage: BEFORE=/tmp/tools-before bench/results/2026-12-01-tools-read-ab/run.sh
#   git worktree add /tmp/tools-before 37265e5 && ln -s "$PWD/node_modules" /tmp/tools-before/node_modules
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
out=$here/bench/results/2026-12-01-tools-read-ab
for round in 1 2 3 4; do
  for side in before after; do
    dir=$here; [ $side = before ] && dir=$BEFORE
    (cd "$dir" && npx tsx bench/tools-read.ts --events 1000000 --repeats 3 --data-dir /tmp/leasehold-bench-tools-read-1m \
      --reads raw,replay,audit,replay-worker,audit-worker --json > "$out/$side-$round.json" 2> "$out/$side-$round.log")
  done
done
