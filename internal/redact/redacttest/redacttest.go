package redacttest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Check prints v (and a pointer to it, and v as a field of a struct, a
// map value and a slice element) through every channel, and fails when
// any output holds one of the secrets. wire, when not nil, is v's JSON
// purpose: json.Marshal must give exactly it (the secrets included); when
// nil, json.Marshal must redact too. want, when set, must appear in the
// String output (proof that the safe fields remain useful).
func Check[T any](t *testing.T, v T, secrets []string, wire []byte, want ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			t.Fatal("an empty secret proves nothing")
		}
	}
	p := &v
	type holder struct {
		V T
		P *T
	}
	h := holder{V: v, P: p}
	outs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		outs["fmt "+verb] = fmt.Sprintf(verb, v)
		outs["fmt pointer "+verb] = fmt.Sprintf(verb, p)
		outs["fmt field "+verb] = fmt.Sprintf(verb, h)
		outs["fmt map "+verb] = fmt.Sprintf(verb, map[string]T{"k": v})
		outs["fmt slice "+verb] = fmt.Sprintf(verb, []T{v})
	}
	outs["Sprint"] = fmt.Sprint(v, p)
	outs["Sprintln"] = fmt.Sprintln(v, p)
	outs["error wrap"] = fmt.Errorf("failed with %v", v).Error()
	if s, ok := any(v).(fmt.Stringer); ok {
		outs["String"] = s.String()
	} else {
		t.Errorf("%T has no String method", v)
	}
	if g, ok := any(v).(fmt.GoStringer); ok {
		outs["GoString"] = g.GoString()
	} else {
		t.Errorf("%T has no GoString method", v)
	}
	if _, ok := any(v).(slog.LogValuer); !ok {
		t.Errorf("%T is not a slog.LogValuer", v)
	}
	for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var b bytes.Buffer
		l := slog.New(newHandler(&b))
		l.Info("value", "v", v, "p", p)
		if wire == nil || name == "slog text" {
			// A value whose JSON is its wire form marshals whole inside
			// another value that a JSON handler marshals: by design.
			l.Info("holder", "h", h)
		}
		l.Info("group", slog.Group("g", slog.Any("v", v)))
		l.With("v", v).Info("with")
		outs[name] = b.String()
	}
	j, err := json.Marshal(v)
	switch {
	case err != nil:
		t.Errorf("json.Marshal: %v", err)
	case wire != nil:
		if !bytes.Equal(j, wire) {
			t.Errorf("json.Marshal is the wire form: got %s, want %s", j, wire)
		}
	default:
		outs["json"] = string(j)
		jp, _ := json.Marshal(h)
		outs["json field"] = string(jp)
	}
	// A secret also leaks as hex (%x) or as decimal bytes (%d).
	var forms []string
	for _, s := range secrets {
		dec := fmt.Sprint([]byte(s))
		forms = append(forms, s, hex.EncodeToString([]byte(s)), strings.ToUpper(hex.EncodeToString([]byte(s))), dec[1:len(dec)-1])
	}
	for channel, out := range outs {
		for _, s := range forms {
			if strings.Contains(out, s) {
				t.Errorf("%T leaks %q through %s: %s", v, s, channel, out)
			}
		}
	}
	for _, w := range want {
		if !strings.Contains(outs["String"], w) {
			t.Errorf("%T's String lost the safe field %q: %s", v, w, outs["String"])
		}
	}
}
