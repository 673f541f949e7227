#!/usr/bin/env bash
# Runs a command tied to the process that started this script, so that it
# cannot outlive it: `leasehold serve` starts its local nats-server this way.
#
#   scripts/run-tied.sh <command> [args...]   (stdin: a pipe from the parent)
#
# Prints the command's pid on stdout, then waits. It stops the command
# (SIGTERM, then SIGKILL after 5 s) when
#   - its stdin reaches end of file: the parent closed the pipe or died, in
#     whatever way (SIGKILL included: the kernel closes a dead process's pipes);
#   - it receives SIGTERM, SIGINT or SIGHUP.
# It exits with the command's status when the command ends on its own.
set -u

# Kept open for the watcher below; a background job would otherwise read /dev/null.
exec 3<&0
"$@" </dev/null 3<&- &
child=$!
printf '%s\n' "$child"

stop_child() {
  kill -TERM "$child" 2>/dev/null || return 0
  local i
  for ((i = 0; i < 50; i++)); do
    kill -0 "$child" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$child" 2>/dev/null || true
}

# Blocks in read (no polling) until the parent's end of the pipe closes.
(
  while IFS= read -r -u 3 _; do :; done
  kill -TERM "$$" 2>/dev/null
) &
watcher=$!
exec 3<&-

trap 'stop_child; wait "$child"; status=$?; kill "$watcher" 2>/dev/null; exit "$status"' TERM INT HUP
wait "$child"
status=$?
kill "$watcher" 2>/dev/null
exit "$status"
