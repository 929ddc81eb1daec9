//go:build unix

package crm

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The database file and its -wal and -shm files are 0600 from their
// creation, whatever the umask, and a file an older version left looser is
// made private when it is opened.
func TestSQLiteFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "crm.db")
	s := open(t, "sqlite:"+path)
	defer s.Close()
	id, err := s.NewConnect(ctx, "alice", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CompleteConnect(ctx, id, "alice", "the-key"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %04o after the first write, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(path + "-wal"); fi.Size() == 0 {
		t.Error("the write did not reach the WAL, so its mode proves nothing")
	}

	older := filepath.Join(dir, "older.db")
	for _, p := range []string{older, older + "-wal", older + "-shm"} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s2 := open(t, "sqlite:"+older)
	defer s2.Close()
	for _, p := range []string{older, older + "-wal", older + "-shm"} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s was not made private: %v %v", filepath.Base(p), fi.Mode(), err)
		}
	}
}
