#!/usr/bin/env bash
# Regenerates docs/img/dashboard.png: the dashboard's browser test
# (test/http/dashboard.int.test.ts) drives Debian's chromium through
# playwright-core against a live service and, asked to, writes the page as it
# shows the test's proxies, hosts, locks, a session and the latest events.
set -euo pipefail
cd "$(dirname "$0")/.."
CHROMIUM_BIN="$(bash scripts/chromium.sh)"
NATS_SERVER_BIN="$(bash scripts/nats-server.sh)"
export CHROMIUM_BIN NATS_SERVER_BIN
LEASEHOLD_DASHBOARD_SCREENSHOT=1 npx vitest run --project int test/http/dashboard.int.test.ts
printf 'wrote docs/img/dashboard.png\n' >&2
