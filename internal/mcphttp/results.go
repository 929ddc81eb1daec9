package mcphttp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/mrtr-wasm/mrtr-wasm/internal/rawjson"
)

// What a valid result is in MCP 2026-07-28 (schema.ts): every result has
// a resultType, and the results a client may cache (CacheableResult, and
// DiscoverResult) have ttlMs and cacheScope. An upstream of the 2025 era,
// or a 2026-07-28 one that leaves them out, answers results that a strict
// client (the TypeScript SDK 2.x) refuses.

// cacheable lists the methods whose results are CacheableResult.
var cacheable = map[string]bool{
	"tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "resources/read": true, "server/discover": true,
}

// DefaultCacheHint is what a cacheable result gets when its server gave
// none: the hint that can neither leak across principals nor go stale.
const DefaultCacheHint = `"ttlMs":0,"cacheScope":"private"`

// ErrInvalidResult is the error of a result no 2026-07-28 client may
// receive; its message names what is wrong.
var ErrInvalidResult = errors.New("invalid result")

// ConformResult returns resp, a JSON-RPC response to method, as a
// 2026-07-28 client must receive it: a result without resultType gets
// "complete", a cacheable result without ttlMs or cacheScope gets
// DefaultCacheHint's. What the server did send is kept byte for byte; a
// member of the wrong type or value is an error wrapping
// ErrInvalidResult, never passed on. Errors and non-results pass as
// they are.
func ConformResult(method string, resp []byte) ([]byte, error) {
	ms, err := rawjson.Object(resp)
	if err != nil {
		return nil, fmt.Errorf("%w: the response is not one JSON object (%v)", ErrInvalidResult, err)
	}
	res, ok := rawjson.Find(ms, "result")
	if !ok {
		return resp, nil
	}
	rv := resp[res.Start:res.End]
	rms, err := rawjson.Object(rv)
	if err != nil {
		return nil, fmt.Errorf("%w: its result is not a JSON object", ErrInvalidResult)
	}
	var add []byte
	if rt, ok := rawjson.Find(rms, "resultType"); !ok {
		add = append(add, `"resultType":"complete"`...)
	} else if s, isString := rawjson.String(rv[rt.Start:rt.End]); !isString || (s != "complete" && s != "input_required") {
		return nil, fmt.Errorf("%w: resultType %s is not one this proxy carries (complete, input_required)", ErrInvalidResult, clip(rv[rt.Start:rt.End]))
	}
	if cacheable[method] {
		if t, ok := rawjson.Find(rms, "ttlMs"); !ok {
			add = appendMember(add, `"ttlMs":0`)
		} else if n, err := strconv.ParseInt(string(rv[t.Start:t.End]), 10, 64); err != nil || n < 0 {
			return nil, fmt.Errorf("%w: ttlMs %s is not a non-negative integer", ErrInvalidResult, clip(rv[t.Start:t.End]))
		}
		if c, ok := rawjson.Find(rms, "cacheScope"); !ok {
			add = appendMember(add, `"cacheScope":"private"`)
		} else if s, _ := rawjson.String(rv[c.Start:c.End]); s != "private" && s != "public" {
			return nil, fmt.Errorf("%w: cacheScope %s is neither \"private\" nor \"public\"", ErrInvalidResult, clip(rv[c.Start:c.End]))
		}
	}
	if len(add) == 0 {
		return resp, nil
	}
	// Splice the members in after the result's opening brace.
	open := res.Start + rawjson.SkipSpace(rv, 0)
	out := make([]byte, 0, len(resp)+len(add)+1)
	out = append(out, resp[:open+1]...)
	out = append(out, add...)
	if len(rms) > 0 {
		out = append(out, ',')
	}
	return append(out, resp[open+1:]...), nil
}

func appendMember(b []byte, m string) []byte {
	if len(b) > 0 {
		b = append(b, ',')
	}
	return append(b, m...)
}

// clip cuts a value for an error message.
func clip(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}
