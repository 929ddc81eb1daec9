//go:build unix

package privatefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A database left 0644 with a 0640 WAL comes out 0600 with its -wal, and
// a missing -shm is created 0600, whatever the umask.
func TestSQLiteTightensAndCreates(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	db := filepath.Join(t.TempDir(), "x.db")
	for p, m := range map[string]os.FileMode{db: 0o644, db + "-wal": 0o640} {
		if err := os.WriteFile(p, []byte("data"), m); err != nil {
			t.Fatal(err)
		}
	}
	if err := SQLite(db); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want 0600", filepath.Base(p), fi.Mode(), err)
		}
	}
	if b, _ := os.ReadFile(db); string(b) != "data" {
		t.Errorf("the database's content changed: %q", b)
	}
	if err := Ensure(filepath.Dir(db)); err == nil {
		t.Error("a directory was taken for a private file")
	}
}

// WriteNew never replaces a file and creates 0600 under umask 0.
func TestWriteNew(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "key")
	if err := WriteNew(p, []byte("k1")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v, want 0600", fi.Mode(), err)
	}
	if err := WriteNew(p, []byte("k2")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("an existing file: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "k1" {
		t.Fatalf("the file was replaced: %q", b)
	}
}
