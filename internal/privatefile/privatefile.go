// Package privatefile creates the files that hold secrets (keys, the
// ledger's stored results, the CRM's calendar keys) readable by their
// owner only, mode 0600, and tightens such a file that exists with a
// looser mode (left by an older version or made by hand under umask 022).
package privatefile

import (
	"errors"
	"fmt"
	"os"
)

// Mode is the mode of every private file.
const Mode os.FileMode = 0o600

// Ensure creates path with Mode, or makes an existing regular file Mode.
func Ensure(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, Mode)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s is not a regular file", path)
	case fi.Mode().Perm() != Mode:
		err = f.Chmod(Mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("making %s private (mode 0600): %w", path, err)
	}
	return nil
}

// SQLite makes a SQLite database file private before it is opened, its
// -wal and -shm companions included: they hold recent writes, and SQLite
// gives a new one the database's mode, or keeps an existing one's.
func SQLite(path string) error {
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		errs = append(errs, Ensure(p))
	}
	return errors.Join(errs...)
}

// WriteNew writes b to a new file at path, created with Mode (so it is
// never readable by others, whatever the umask), and synced. An existing
// file is never replaced: the error then wraps fs.ErrExist. A failed
// write removes the file.
func WriteNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, Mode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
