package mcphttp

import (
	"strings"
	"testing"
)

// BenchmarkParseMessage: a plain tools/call and a retry, read in one pass
// (ParseMessage) and through encoding/json (parseWire, what it did
// before).
//
//	go test ./internal/mcphttp -run '^$' -bench BenchmarkParseMessage -benchmem
func BenchmarkParseMessage(b *testing.B) {
	for _, c := range []struct{ name, msg string }{
		{"call", exactSeeds[0]},
		{"retry", `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"test_input_required_result_request_state","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}},"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"requestState":"v4.local.` + strings.Repeat("A", 300) + `"}}`},
	} {
		msg := []byte(c.msg)
		b.Run(c.name+"/one_pass", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseMessage(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/encoding_json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseWire(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
