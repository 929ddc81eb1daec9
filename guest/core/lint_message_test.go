package core

import "testing"

// TestSecretAskedInTheMessage: a form of one text field without a
// description is read with its message as the description, so a secret
// asked for in the message alone is refused; what the message says about
// other things is not.
func TestSecretAskedInTheMessage(t *testing.T) {
	g := New()
	p := &g.p
	for _, c := range []struct {
		msg, prop string
		secret    bool
	}{
		{"Enter your online-banking password below", `"value":{"type":"string"}`, true},
		{"Paste your OpenAI API key", `"answer":{"type":"string","title":"Answer"}`, true},
		{"Your GitHub token", `"input_1":{"type":"string"}`, true},
		{"Enter the one-time code we sent you", `"value":{"type":"string"}`, true},
		{"Enter your card number", `"value":{"type":"string"}`, true},
		{"Choose a name for your new API key", `"value":{"type":"string"}`, false},
		{"What should we call you? We never ask for your password.", `"value":{"type":"string"}`, false},
		{"Why do you want to reset your password?", `"reason":{"type":"string"}`, false},
		{"How many tokens may the model use?", `"value":{"type":"string"}`, false},
		{"Please confirm your email", `"value":{"type":"string"}`, false},
		{"Enter your password", `"ok":{"type":"boolean"}`, false},
		{"Enter your password", `"nick":{"type":"string","description":"Your nickname"}`, false},
		{"Enter your password", `"a":{"type":"string"},"b":{"type":"string"}`, false}, // the fields say what they are
	} {
		root, err := p.parse([]byte(`{"message":`+tJSON(c.msg)+`,"requestedSchema":{"type":"object","properties":{`+c.prop+`}}}`), 64)
		if err != nil {
			t.Fatal(err)
		}
		_, fs := g.lintInputRequest(p, "elicitation/create", root)
		if fs.hasError() != c.secret {
			t.Errorf("%q over {%s}: refused %v, want %v (%+v)", c.msg, c.prop, fs.hasError(), c.secret, fs)
		}
	}
}
