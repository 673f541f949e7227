#!/usr/bin/env bash
# Locate (or install) a Chromium for the dashboard's browser test.
#
# Prints ONLY the absolute path of the browser on stdout; everything else goes
# to stderr, so callers can do:  CHROMIUM_BIN="$(scripts/chromium.sh)"
# Lookup order: $CHROMIUM_BIN, then chromium / chromium-browser on PATH, then
# Debian's `chromium` package through apt-get (needs root, as CI runs).
set -euo pipefail

log() { printf 'chromium.sh: %s\n' "$*" >&2; }

works() { [[ -n "$1" && -x "$1" ]] && "$1" --version >/dev/null 2>&1; }

if [[ -n "${CHROMIUM_BIN:-}" ]]; then
  if works "$CHROMIUM_BIN"; then printf '%s\n' "$CHROMIUM_BIN"; exit 0; fi
  log "ignoring CHROMIUM_BIN=$CHROMIUM_BIN (missing or does not run)"
fi
for name in chromium chromium-browser; do
  if bin="$(command -v "$name" 2>/dev/null)" && works "$bin"; then printf '%s\n' "$bin"; exit 0; fi
done

command -v apt-get >/dev/null 2>&1 || { log "no chromium found and no apt-get to install Debian's; install chromium or set CHROMIUM_BIN"; exit 1; }
[[ "$(id -u)" == 0 ]] || { log "no chromium found; install it (sudo apt-get install chromium) or set CHROMIUM_BIN"; exit 1; }
log "installing Debian's chromium package ..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q chromium >&2
bin="$(command -v chromium)" && works "$bin" || { log "chromium was installed but does not run"; exit 1; }
printf '%s\n' "$bin"
