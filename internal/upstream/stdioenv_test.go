package upstream

import (
	"strings"
	"testing"
)

// A mistyped --upstream-env or --upstream-env-pass is refused by its
// number, never with its text: --upstream-env "$TOKEN" (the '=' forgotten)
// used to print the token.
func TestStdioEnvErrorsDoNotEchoTheValue(t *testing.T) {
	const secret = "sk-live-0123456789"
	none := func(string) (string, bool) { return "", false }
	for _, c := range []struct{ set, pass []string }{
		{set: []string{"A=1", secret}},
		{set: []string{"A=1", "=" + secret}},
		{pass: []string{"HOME", "TOKEN=" + secret}},
		{pass: []string{"HOME", ""}},
	} {
		_, err := StdioEnv(c.set, c.pass, none)
		if err == nil {
			t.Errorf("%q %q was taken", c.set, c.pass)
			continue
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "number 2") {
			t.Errorf("%q %q: %v", c.set, c.pass, err)
		}
	}
}
