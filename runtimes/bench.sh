#!/usr/bin/env bash
# Times resume through guard.wasm in Node, Deno, Bun, workerd and headless
# Chromium, beside the Go host (bench/bench.mjs). Installs the runtimes
# first if they are not there (npm ci). Run it on a quiet machine.
#   runtimes/bench.sh [N]    (default 10000)
set -euo pipefail
cd "$(dirname "$0")"
[ -x node_modules/.bin/workerd ] && [ -d node_modules/mrtr-wasm ] || ../scripts/npm-ci.sh .
uptime
node bench/bench.mjs "$@"
