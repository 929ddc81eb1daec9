package proxy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/internal/audit"
)

// --audit at the proxy: the sealed round, the answer, the forward and the
// replay are records of one chain that verifies; no answer value is in it.
func TestProxyAuditLog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.log")
	al, err := audit.Open(file, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	base, _ := serveProxy(t, Config{Guard: newGuard(t), Upstream: httpUpstream(t, modernNameUpstream(t, &rec)), Audit: al})
	st := answerTooMuch(t, base, "q")
	callTool(t, base, "profile", `{}`, `,"inputResponses":{"q":`+hostileAnswer+`},"requestState":"`+st+`"`) // a replay
	al.Close()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"form.asked"`, `"name":"q.name","kind":"string"`, `"kind":"form.answered"`, `"outcome":"accept"`, `"kind":"executed"`, `"kind":"replayed"`, `"target":"profile"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the audit log lacks %s:\n%s", want, b)
		}
	}
	for _, v := range []string{"Bob", "hunter2", "admin"} {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("the audit log holds %q", v)
		}
	}
	if s, err := audit.Verify(file); err != nil || s.Records != 6 {
		t.Fatalf("verify: %+v %v\n%s", s, err, b)
	}
}
