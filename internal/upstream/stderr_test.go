package upstream

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileStderr is what a child writes to forge a log line, move the
// terminal's cursor and hide text: CR, LF inside a line's bytes would be
// two lines, so only CR, ESC, other C0 and C1 controls, a bidi override,
// and bytes that are not UTF-8.
var hostileStderr = "ok\r level=ERROR msg=forged\x1b[2J\x1b]0;title\x07\x00\x7f\u0085\u202egnp.exe\xff\xfe\\x1b\n"

// stderrLog runs a child in mode that writes hostileStderr, and returns
// the "upstream stderr" records' text.
func stderrLog(t *testing.T, mode string) string {
	t.Helper()
	cfg, l := childConfig(t, "ok")
	cfg.Stderr = mode
	s := startChild(t, cfg)
	args := map[string]any{"raw": base64.StdEncoding.EncodeToString([]byte(hostileStderr))}
	if _, err := s.Call(context.Background(), toolCall("1", "stderr", args, ""), nil, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for deadline := time.Now().Add(5 * time.Second); l.count("upstream stderr") == 0 && mode != StderrDrop && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return l.text()
}

// TestStdioStderrEscaped: no control character, nor a byte that is not
// UTF-8, of a child's stderr reaches the log; each is shown escaped.
func TestStdioStderrEscaped(t *testing.T) {
	text := stderrLog(t, "")
	for _, r := range text {
		if r == '\n' {
			continue // the records' own separator (logs.text)
		}
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == '\u202e' || r == '\uFFFD' {
			t.Fatalf("control character %U reached the log:\n%q", r, text)
		}
	}
	want := `line=ok\r level=ERROR msg=forged\x1b[2J\x1b]0;title\a\x00\x7f\u0085\u202egnp.exe\xff\xfe\\x1b`
	if !strings.Contains(text, want+"\n") {
		t.Fatalf("log:\n%s\nwant a line %s", text, want)
	}
}

// TestStdioStderrModes: --upstream-stderr=size logs each line's length
// only; drop logs nothing of it.
func TestStdioStderrModes(t *testing.T) {
	size := "bytes=" + strconv.Itoa(len(hostileStderr)-1) + " cut=false"
	if text := stderrLog(t, StderrSize); !strings.Contains(text, "upstream stderr pid=") ||
		!strings.Contains(text, size) || strings.Contains(text, "forged") {
		t.Fatalf("size:\n%s", text)
	}
	if text := stderrLog(t, StderrDrop); strings.Contains(text, "upstream stderr") {
		t.Fatalf("drop:\n%s", text)
	}
	if err := CheckStderrMode("verbose"); err == nil {
		t.Fatal("--upstream-stderr=verbose was taken")
	}
}
