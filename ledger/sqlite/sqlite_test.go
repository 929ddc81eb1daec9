package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

// TestMain lets the test binary act as a second process on a shared
// SQLite file (see TestSQLiteTwoProcesses).
func TestMain(m *testing.M) {
	if path := os.Getenv("MRTR_LEDGER_HELPER_DB"); path != "" {
		sqliteHelper(path)
		return
	}
	os.Exit(m.Run())
}

const (
	procOps     = 200
	procWorkers = 4
)

// claimAll runs procWorkers goroutines over every op in a shuffled order;
// each claims, finishes what it acquired, and reports one line per op.
// Worker w of both processes walks the same order (half of the child's
// walk it backwards), so the two race for the same ops. A short pause after each op leaves the file's write lock free
// now and then: SQLite has no queue between processes, and a process
// that writes flat out starves the other's busy handler.
func claimAll(l ledger.Ledger, tag string, out func(line string)) error {
	fp := ledgertest.FP("shared answers")
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make(chan error, procWorkers)
	for w := 0; w < procWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := rand.New(rand.NewPCG(1, uint64(w))).Perm(procOps)
			if tag == "child" && w >= procWorkers/2 {
				slices.Reverse(order) // these meet their twin midway
			}
			for _, i := range order {
				op := fmt.Sprintf("op-%03d", i)
				c, err := l.Claim(context.Background(), op, fp, time.Minute)
				if err != nil {
					errs <- err
					return
				}
				res := ""
				switch c.Status {
				case ledger.Acquired:
					res = fmt.Sprintf("%s-%d-%s", tag, w, op)
					if err := l.Finish(context.Background(), op, c.Token, fp, []byte(res), time.Hour); err != nil {
						errs <- err
						return
					}
				case ledger.Finished:
					res = string(c.Result)
				}
				mu.Lock()
				out(fmt.Sprintf("%s %s %s %s", tag, op, c.Status, res))
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// sqliteHelper is the second process: it opens the file, says ready,
// waits for the start time, claims, and exits without closing (as a crash would).
func sqliteHelper(path string) {
	l, err := Open(context.Background(), path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(w, "ready")
	w.Flush()
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	at, perr := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil || perr != nil {
		os.Exit(3)
	}
	time.Sleep(time.Until(time.Unix(0, at)))
	err = claimAll(l, "child", func(line string) { fmt.Fprintln(w, line) })
	if err != nil {
		fmt.Fprintln(w, "error", err)
		w.Flush()
		os.Exit(4)
	}
	w.Flush()
	os.Exit(0)
}

// TestSQLiteTwoProcesses: this process and a re-executed copy of the test
// binary claim the same 200 operations at once, 4 goroutines each, in
// shuffled orders. Every operation must be acquired exactly once, and
// every replay must carry the winner's result.
func TestSQLiteTwoProcesses(t *testing.T) {
	// Exactly-once is checked on every attempt; that the two processes
	// really contended (both won some claims) depends on scheduling, so an
	// attempt in which one process ran alone is repeated, at most 3 times.
	for attempt := 1; ; attempt++ {
		byProc := twoProcessClaims(t, filepath.Join(t.TempDir(), "shared.db"))
		t.Logf("attempt %d: acquired by process: %v", attempt, byProc)
		if byProc["parent"] > 0 && byProc["child"] > 0 {
			return
		}
		if attempt == 3 {
			t.Fatalf("one process won every claim in 3 attempts (%v): the processes did not contend", byProc)
		}
	}
}

// twoProcessClaims races this process and a helper process over the same
// operations in one SQLite file, checks that each was acquired once and
// replayed with its winner's result, and returns the wins per process.
func twoProcessClaims(t *testing.T, path string) map[string]int {
	t.Helper()
	parent := openTest(t, path)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MRTR_LEDGER_HELPER_DB="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	var lines []string
	var mu sync.Mutex
	childOut := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		childOut <- b
	}()
	// Both start at the same instant, a little ahead, so a slow start of
	// either process does not decide the race.
	at := time.Now().Add(100 * time.Millisecond)
	if _, err := io.WriteString(stdin, strconv.FormatInt(at.UnixNano(), 10)+"\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(at))
	if err := claimAll(parent, "parent", func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() }); err != nil {
		t.Fatal(err)
	}
	child := <-childOut
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v\n%s", err, child)
	}
	lines = append(lines, strings.Split(strings.TrimSpace(string(child)), "\n")...)

	winner := map[string]string{}
	byProc := map[string]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 3 || f[0] == "error" {
			t.Fatalf("bad line %q", l)
		}
		if f[2] == ledger.Acquired.String() {
			if w, dup := winner[f[1]]; dup {
				t.Fatalf("%s acquired twice: by %s and by %s", f[1], w, f[3])
			}
			winner[f[1]] = f[3]
			byProc[f[0]]++
		}
	}
	if len(winner) != procOps {
		t.Fatalf("%d operations acquired, want %d", len(winner), procOps)
	}
	for _, l := range lines {
		if f := strings.Fields(l); f[2] == ledger.Finished.String() && f[3] != winner[f[1]] {
			t.Fatalf("%s replayed %q, the winner stored %q", f[1], f[3], winner[f[1]])
		}
	}
	if len(lines) != 2*procWorkers*procOps {
		t.Fatalf("%d lines, want %d", len(lines), 2*procWorkers*procOps)
	}
	// The child exited without closing: its finished results are on disk.
	for op, res := range winner {
		e, err := parent.Get(context.Background(), op)
		if err != nil || e.State != ledger.Done || string(e.Result) != res {
			t.Fatalf("%s after the helper exited: %+v %v, want done %q", op, e, err, res)
		}
	}
	return byProc
}

// TestSQLiteTwoHandles: two *sql.DB handles on one file, as two
// processes would have, claiming concurrently.
func TestSQLiteTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.db")
	ls := []ledger.Ledger{openTest(t, path), openTest(t, path)}
	fp := ledgertest.FP("x")
	for round := 0; round < 20; round++ {
		op := ledgertest.NewOp(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		acquired := 0
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := ls[i%2].Claim(context.Background(), op, fp, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if c.Status == ledger.Acquired {
					mu.Lock()
					acquired++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if acquired != 1 {
			t.Fatalf("round %d: %d claims acquired, want 1", round, acquired)
		}
	}
}

// TestSQLiteSurvivesRestart: a finished result is still there after the
// ledger is closed and the file opened again; the file is private.
func TestSQLiteSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "ledger.db")
	ctx := context.Background()
	l, err := ledger.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var syncMode string
	if err := l.(*sqliteLedger).db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil || syncMode != "2" {
		t.Fatalf("synchronous = %q (%v), want 2 (FULL)", syncMode, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("ledger file mode %v, want 0600", fi.Mode().Perm())
	}
	fp := ledgertest.FP("a")
	c := ledgertest.MustClaim(t, l, "op-1", fp, time.Minute, ledger.Acquired)
	if err := l.Finish(ctx, "op-1", c.Token, fp, []byte(`{"ok":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	c2 := ledgertest.MustClaim(t, l, "op-2", fp, time.Minute, ledger.Acquired)
	_ = c2 // op-2 stays pending when the "process" goes away
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, err := ledger.Open(ctx, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if got := ledgertest.MustClaim(t, l2, "op-1", fp, time.Minute, ledger.Finished); string(got.Result) != `{"ok":true}` {
		t.Fatalf("after reopening: %q", got.Result)
	}
	ledgertest.MustClaim(t, l2, "op-2", fp, time.Minute, ledger.InProgress)
}

// TestSQLiteSweep: expired rows are deleted, not just ignored.
func TestSQLiteSweep(t *testing.T) {
	l := openTest(t, filepath.Join(t.TempDir(), "sweep.db"))
	s := l.(*sqliteLedger)
	ctx := context.Background()
	fp := ledgertest.FP("a")
	for i := 0; i < 10; i++ {
		c := ledgertest.MustClaim(t, l, fmt.Sprintf("op-%d", i), fp, time.Minute, ledger.Acquired)
		if err := l.Finish(ctx, fmt.Sprintf("op-%d", i), c.Token, fp, []byte("r"), 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	s.lastSweep.Store(0)
	ledgertest.MustClaim(t, l, "op-new", fp, time.Minute, ledger.Acquired)
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM mrtr_ledger").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d rows after the sweep (%v), want 1", n, err)
	}
}

func openTest(t testing.TB, path string) ledger.Ledger {
	t.Helper()
	l, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// The contract, on a real file. SQLite reads Go's clock, so the timed
// checks run in a synctest bubble.
func TestContract(t *testing.T) {
	ledgertest.Contract(t, ledgertest.Bubble, func(t *testing.T) ledger.Ledger {
		return openTest(t, filepath.Join(t.TempDir(), "ledger.db"))
	})
}

// Open's settings: a path is required; a password-free error.
func TestOpenSetting(t *testing.T) {
	if _, err := ledger.Open(context.Background(), "sqlite:"); err == nil {
		t.Fatal("sqlite: without a path opened")
	}
}
