package audit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func writeLog(t testing.TB, path string, n int) *Log {
	t.Helper()
	l, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := l.Append(Record{Kind: "form.asked", Principal: "ann", Method: "tools/call", Target: "book",
			Fields: []Field{{"email", "string/email"}}, Round: i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
}

func write(t *testing.T, path string, ls [][]byte) {
	t.Helper()
	var b []byte
	for _, l := range ls {
		b = append(b, bytes.TrimSuffix(l, []byte("\n"))...)
		b = append(b, '\n')
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Every change, removal or swap of one record fails at that record.
func TestVerifyNamesTheRecordThatDoesNotFit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l := writeLog(t, path, 9)
	seq, head := l.Head()
	l.Close()
	s, err := Verify(path)
	if err != nil || s.Records != 10 || s.Seq != seq || s.Head != head {
		t.Fatalf("a clean log: %+v %v (head %d %s)", s, err, seq, head)
	}
	orig := lines(t, path)
	for i := range orig {
		for _, c := range []struct {
			name string
			edit func([][]byte) [][]byte
			at   int
		}{
			{"changed", func(ls [][]byte) [][]byte {
				ls[i] = bytes.Replace(ls[i], []byte(`"ann"`), []byte(`"bob"`), 1)
				if i == 0 {
					ls[i] = bytes.Replace(ls[i], []byte(`"audit.started"`), []byte(`"audit.startex"`), 1)
				}
				return ls
			}, i + 1},
			{"removed", func(ls [][]byte) [][]byte { return append(ls[:i], ls[i+1:]...) }, i + 1},
			{"swapped", func(ls [][]byte) [][]byte {
				if i+1 < len(ls) {
					ls[i], ls[i+1] = ls[i+1], ls[i]
				}
				return ls
			}, i + 1},
		} {
			if (c.name == "removed" || c.name == "swapped") && i == len(orig)-1 {
				continue // the tail: see TestVerifyHeadShowsACutTail
			}
			ls := c.edit(append([][]byte(nil), copyAll(orig)...))
			write(t, path, ls)
			_, err := Verify(path)
			var br *Break
			if !errors.As(err, &br) || br.Line != c.at {
				t.Errorf("record %d %s: %v, want a break at line %d", i+1, c.name, err, c.at)
			}
		}
	}
}

func copyAll(ls [][]byte) [][]byte {
	out := make([][]byte, len(ls))
	for i, l := range ls {
		out[i] = bytes.Clone(l)
	}
	return out
}

// A cut tail leaves a valid chain; the head Verify reports is then not
// the writer's.
func TestVerifyHeadShowsACutTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l := writeLog(t, path, 3)
	_, head := l.Head()
	l.Close()
	ls := lines(t, path)
	write(t, path, ls[:len(ls)-1])
	s, err := Verify(path)
	if err != nil || s.Head == head {
		t.Fatalf("a cut tail: %+v %v", s, err)
	}
}

// Reopening continues the chain; a rotated file starts with the last hash
// of the one before, and the files verify as one chain.
func TestReopenAndRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	writeLog(t, path, 2).Close()
	l, err := Open(path, 600)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := l.Append(Record{Kind: "executed", Target: "t" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	old, _ := filepath.Glob(path + ".*")
	if len(old) < 2 {
		t.Fatalf("rotated files: %v", old)
	}
	s, err := Verify(append(old, path)...)
	if err != nil || s.Records != 3+10+len(old) {
		t.Fatalf("the series: %+v %v", s, err)
	}
	// A rotated file alone verifies from its first record on.
	if _, err := Verify(path); err != nil {
		t.Fatalf("the newest file alone: %v", err)
	}
	// Dropping a middle file breaks the chain at the next one's start.
	_, err = Verify(append([]string{old[0]}, append(old[2:], path)...)...)
	var br *Break
	if len(old) > 2 && (!errors.As(err, &br) || br.Line != 1) {
		t.Fatalf("a missing file: %v", err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

func BenchmarkAppend(b *testing.B) {
	l := writeLog(b, filepath.Join(b.TempDir(), "audit.log"), 0)
	defer l.Close()
	r := Record{Kind: "form.answered", Principal: "https://login.example.com/#248289761001", Method: "tools/call", Target: "book_demo_call",
		Round: 2, Outcome: "accept", Fields: []Field{{"name", "string"}, {"email", "string/email"}},
		AnswersDigest: "6f1ed002ab5595859014ebf0951522d9f0b9b1f1b2f5b1a5f7c5c3e1a1e2d3c4"}
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Append(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.log")
	writeLog(b, path, 10000).Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Verify(path); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(10001*b.N)/b.Elapsed().Seconds(), "records/s")
}
