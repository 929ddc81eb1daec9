package mcphttp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
)

// EncodeHeader is v as a header value: as it is, or in the =?base64?…?=
// form when it holds a byte outside printable ASCII or begins or ends
// with a space or a tab (which HTTP would trim).
func EncodeHeader(v string) string {
	plain := v == "" || (v[0] != ' ' && v[0] != '\t' && v[len(v)-1] != ' ' && v[len(v)-1] != '\t')
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] <= 0x7e
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// SetParamHeaders sets on h the Mcp-Param-* headers a 2026-07-28 client
// sends with a tools/call of these arguments (params: the tool's
// x-mcp-header annotations), those CheckHeaders compares: one per
// argument that is present and not null, its string, boolean or number
// as text. An argument that is not a primitive, or whose name is also
// spelt in another case, gets none (CheckHeaders refuses the call).
func SetParamHeaders(h http.Header, arguments json.RawMessage, params []ParamHeader) {
	if len(params) == 0 {
		return
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(arguments, &args) != nil {
		return
	}
	for _, ph := range params {
		raw, ok, other := lookup(args, ph.Path)
		if !ok || other != "" || string(raw) == "null" {
			continue
		}
		if v, ok := primitiveText(raw); ok {
			h.Set("Mcp-Param-"+ph.Header, EncodeHeader(v))
		}
	}
}

// primitiveText is a JSON string, boolean or number as primitiveEqual
// reads it from a header.
func primitiveText(raw json.RawMessage) (string, bool) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case json.Number:
		return x.String(), true
	}
	return "", false
}
