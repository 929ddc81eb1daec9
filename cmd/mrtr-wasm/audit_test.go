package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/internal/audit"
)

func TestAuditVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"form.asked", "form.answered", "executed"} {
		if err := l.Append(audit.Record{Kind: k, Principal: "ann", Target: "book_demo_call"}); err != nil {
			t.Fatal(err)
		}
	}
	_, head := l.Head()
	l.Close()
	var out, errb bytes.Buffer
	if code := run([]string{"audit", "verify", "--head", head, path}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "ok: 4 records") {
		t.Fatalf("a clean log: %d %s %s", code, out.String(), errb.String())
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(b, []byte(`"form.answered"`), []byte(`"form.declined"`), 1), 0o600)
	out.Reset()
	if code := run([]string{"audit", "verify", path}, &out, &errb); code != exitFindings || !strings.Contains(out.String(), "audit.log:3:") {
		t.Fatalf("an edited record: %d %s", code, out.String())
	}
	os.WriteFile(path, b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1], 0o600)
	out.Reset()
	if code := run([]string{"audit", "verify", "--head", head, path}, &out, &errb); code != exitFindings || !strings.Contains(out.String(), "cut from the end") {
		t.Fatalf("a cut tail: %d %s", code, out.String())
	}
	if code := run([]string{"audit", "verify", filepath.Join(t.TempDir(), "none")}, &out, &errb); code != exitUsage {
		t.Fatalf("a missing file: %d", code)
	}
	if code := run([]string{"audit", "verify"}, &out, &errb); code != exitUsage {
		t.Fatalf("no file: %d", code)
	}
}
