package redact

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// String renders name{key=value …} from attributes that carry no secret.
func String(name string, attrs []slog.Attr) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, a := range attrs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a.Key)
		b.WriteByte('=')
		b.WriteString(a.Value.String())
	}
	b.WriteString("}")
	return b.String()
}

// Format writes s whatever the verb, so that no verb (%x, %d, %#v…)
// reaches the fields.
func Format(f fmt.State, s string) { _, _ = io.WriteString(f, s) }

// JSON encodes s as a JSON string, for types whose JSON is not their
// purpose.
func JSON(s string) ([]byte, error) { return json.Marshal(s) }

// Set is the attribute for a secret that is present or not: "redacted" or
// "none".
func Set(key string, present bool) slog.Attr {
	if present {
		return slog.String(key, "redacted")
	}
	return slog.String(key, "none")
}
