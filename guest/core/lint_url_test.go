package core

import "testing"

// TestURLCredentialBehindSemicolon: url.ParseQuery drops a pair holding
// ';' (and the whole fragment when one does not parse), and many servers
// split on ';', so a credential hid behind one.
func TestURLCredentialBehindSemicolon(t *testing.T) {
	for _, u := range []string{
		"https://login.example/cb?access_token=s3cr3t",
		"https://app.example/cb#access_token=s3cr3t",
		"https://app.example/cb#access_token=s3cr3t&x=;",
		"https://login.example/cb?access_token=s3cr3t;",
		"https://login.example/cb?x=1;access_token=s3cr3t",
		"https://login.example/cb?id_token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig;x",
		"https://login.example/cb?x=%zz&api_key=k",
		"https://login.example/cb?x=1;email=a%40b.example",
	} {
		var fs findings
		lintURL(u, &fs)
		if !fs.hasError() {
			t.Errorf("%s: no finding", u)
		}
	}
	for _, u := range []string{
		"https://app.example/connect?state=abc;step=2",
		"https://app.example/connect#section=2;tab=keys",
		"https://app.example/connect?",
	} {
		var fs findings
		lintURL(u, &fs)
		if fs.hasError() {
			t.Errorf("%s: refused: %+v", u, fs)
		}
	}
}
