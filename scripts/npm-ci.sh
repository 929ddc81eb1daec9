#!/usr/bin/env bash
# npm ci in the given folder, tried three times: the registry sometimes
# drops a connection half-way (CI once failed on EIDLETIMEOUT for
# typescript), and a clean reinstall is the only safe retry of `npm ci`.
#
#   scripts/npm-ci.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/npm-ci.sh DIR}
cd "$dir"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
export npm_config_fetch_retries=5 npm_config_fetch_retry_mintimeout=5000 npm_config_fetch_retry_maxtimeout=60000
for try in 1 2 3; do
  if npm ci --loglevel=error; then exit 0; fi
  [ "$try" = 3 ] && break
  echo "npm ci in $dir failed (try $try of 3); retrying in $((try * 20)) s" >&2
  sleep $((try * 20))
done
echo "npm ci in $dir failed three times: is the npm registry reachable?" >&2
exit 1
