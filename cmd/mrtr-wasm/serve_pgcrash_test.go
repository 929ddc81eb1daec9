package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

// crashUsers book through two serve instances while the PostgreSQL
// server both use is SIGKILLed and restarted.
const crashUsers = 40

// TestServePostgresCrash: 40 users book a demo call through two serve
// instances sharing one private PostgreSQL (CRM and ledger), which is
// killed with SIGKILL at random moments and restarted; the users retry
// every retryable error until booked. With the ledger in the CRM's
// tables (bookings_tx: claim, booking and result in one transaction)
// every user ends with exactly one booking, and every booking with its
// ledger entry. The same run with the ledger in another schema (Once,
// not transactional) is logged for comparison: there the CRM's unique
// operation id is what keeps a re-run effect from booking twice.
func TestServePostgresCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	p := ledgertest.StartPostgres(t)
	p.Exec(t, "CREATE SCHEMA tx", "CREATE SCHEMA plain_crm", "CREATE SCHEMA plain_ledger")
	// A short lease: a claim stranded by a crash (plain mode) frees itself
	// within the test's time.
	testGuardOptions = []host.Option{host.WithLedgerLease(3 * time.Second)}
	t.Cleanup(func() { testGuardOptions = nil })

	t.Run("transactional", func(t *testing.T) {
		url := ledgertest.WithSearchPath(t, p.URL, "tx")
		r := crashRun(t, p, url, url)
		if r.tx != 2 {
			t.Fatalf("%d of 2 instances booked transactionally", r.tx)
		}
		r.check(t)
	})
	t.Run("plain", func(t *testing.T) {
		r := crashRun(t, p, ledgertest.WithSearchPath(t, p.URL, "plain_crm"), ledgertest.WithSearchPath(t, p.URL, "plain_ledger"))
		if r.tx != 0 {
			t.Fatalf("%d instances booked transactionally with the ledger in another schema", r.tx)
		}
		// Reported, not asserted: see the log.
	})
}

type crashResult struct {
	schema     string
	url        string
	tx         int               // instances that logged bookings_tx=true
	booked     map[string]string // user -> the booking id it was answered
	perUser    map[string]int    // user -> booking rows
	unrecorded int               // bookings without a done ledger entry (tx: none)
}

func (r *crashResult) check(t *testing.T) {
	t.Helper()
	if len(r.perUser) != crashUsers {
		t.Errorf("%d users have bookings, want %d", len(r.perUser), crashUsers)
	}
	for u, n := range r.perUser {
		if n != 1 {
			t.Errorf("%s has %d bookings, want 1", u, n)
		}
	}
	if r.unrecorded != 0 {
		t.Errorf("%d bookings have no finished ledger entry holding them", r.unrecorded)
	}
}

func crashRun(t *testing.T, p *ledgertest.PostgresProc, crmURL, ledgerURL string) *crashResult {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte(host.GenerateKey()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	toks := map[string]string{}
	for i := range crashUsers {
		toks[fmt.Sprintf("tok-crash-user-%02d-%s", i, randHex(4))] = fmt.Sprintf("user%02d", i)
	}
	tb, _ := json.Marshal(toks)
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, tb, 0o600); err != nil {
		t.Fatal(err)
	}
	// A password (trust auth ignores it) that no log line may show.
	withPassword := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(u.User.Username(), pgPassword)
		return u.String()
	}
	shared := []string{"--keys", keys, "--auth-tokens", tokens, "--ledger", withPassword(ledgerURL), "--crm", withPassword(crmURL)}
	inst := []*served{startServe(t, shared...), startServe(t, shared...)}
	r := &crashResult{booked: map[string]string{}, perUser: map[string]int{}}
	for _, s := range inst {
		if strings.Contains(s.logs.String(), `"bookings_tx":true`) {
			r.tx++
		}
	}
	type user struct {
		name string
		cs   [2]*mcp.ClientSession
	}
	var users []user
	for tok, name := range toks {
		users = append(users, user{name, [2]*mcp.ClientSession{connect(t, inst[0], tok, true, nil), connect(t, inst[1], tok, true, nil)}})
	}
	slices.SortFunc(users, func(a, b user) int { return strings.Compare(a.name, b.name) })

	var mu sync.Mutex
	var successes []time.Time
	errKinds := map[string]int{}
	start := time.Now()
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 200 * time.Millisecond) // 8 s of arrivals
			id, kinds, err := bookThroughCrashes(u.cs, u.name, func() { mu.Lock(); successes = append(successes, time.Now()); mu.Unlock() })
			mu.Lock()
			defer mu.Unlock()
			for k, n := range kinds {
				errKinds[k] += n
			}
			if err != nil {
				t.Errorf("%s: %v", u.name, err)
				return
			}
			r.booked[u.name] = id
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// Kill and restart PostgreSQL at random moments while the users book.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var restarts []time.Time
	kills := 0
loop:
	for kills < 12 {
		select {
		case <-done:
			break loop
		case <-time.After(time.Duration(150+rng.IntN(600)) * time.Millisecond):
		}
		p.Kill(t)
		kills++
		time.Sleep(time.Duration(100+rng.IntN(600)) * time.Millisecond)
		p.Start(t)
		restarts = append(restarts, time.Now())
	}
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		t.Fatal("the users did not finish booking within 45 s of the last restart")
	}
	took := time.Since(start)

	// From each return of PostgreSQL to the next successful booking.
	var recover []string
	for i, at := range restarts {
		end := time.Now()
		if i+1 < len(restarts) {
			end = restarts[i+1]
		}
		var first time.Duration = -1
		for _, s := range successes {
			if s.After(at) && s.Before(end) && (first < 0 || s.Sub(at) < first) {
				first = s.Sub(at)
			}
		}
		if first >= 0 {
			recover = append(recover, first.Round(time.Millisecond).String())
		} else {
			recover = append(recover, "none before the next kill")
		}
	}

	// What PostgreSQL holds.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, crmURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT principal, count(*) FROM bookings GROUP BY principal`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var u string
		var n int
		if err := rows.Scan(&u, &n); err != nil {
			t.Fatal(err)
		}
		r.perUser[u] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Every booking is held by a finished ledger entry whose stored
	// result is that booking.
	lconn, err := pgx.Connect(ctx, ledgerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer lconn.Close(ctx)
	bk, err := conn.Query(ctx, `SELECT id, operation_id, principal FROM bookings`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ id, op, principal string }
	var all []row
	for bk.Next() {
		var x row
		if err := bk.Scan(&x.id, &x.op, &x.principal); err != nil {
			t.Fatal(err)
		}
		all = append(all, x)
	}
	if err := bk.Err(); err != nil {
		t.Fatal(err)
	}
	mismatched := 0
	for _, x := range all {
		var res []byte
		err := lconn.QueryRow(ctx, `SELECT result FROM mrtr_ledger WHERE op = $1 AND done`, x.op).Scan(&res)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !strings.Contains(string(res), x.id)) {
			r.unrecorded++
		} else if err != nil {
			t.Fatal(err)
		}
		if got := r.booked[x.principal]; got != x.id {
			mismatched++
		}
	}
	var run, replay float64
	logText := ""
	for _, s := range inst {
		page := get(t, s.base+"/metrics", "")
		run += metricValue(t, page, `mrtr_effects_total{result="run",tool="book_demo_call"}`)
		replay += metricValue(t, page, `mrtr_effects_total{result="replay",tool="book_demo_call"}`)
		logText += s.logs.String()
		if strings.Contains(s.logs.String(), pgPassword) || strings.Contains(s.logs.String(), "tok-crash-user") {
			t.Error("a log line holds a token or password")
		}
	}
	multi := 0
	for _, n := range r.perUser {
		if n > 1 {
			multi++
		}
	}
	t.Logf("%d kills in %v; %d users with a booking, %d with more than one; %d bookings without their ledger entry; %d answered another id than stored",
		kills, took.Round(time.Millisecond), len(r.perUser), multi, r.unrecorded, mismatched)
	t.Logf("effects run %v, replayed %v (both instances); not_recorded %d, lease_lost %d (log lines)",
		run, replay, strings.Count(logText, `"reason":"not_recorded"`), strings.Count(logText, `"reason":"lease_lost"`))
	t.Logf("retryable errors the users saw: %v", errKinds)
	t.Logf("from PostgreSQL's return to the next booking: %s", strings.Join(recover, ", "))
	if mismatched != 0 && r.tx == 2 {
		t.Errorf("%d users were answered another booking than the one stored", mismatched)
	}
	return r
}

// bookThroughCrashes books as one user: round 1 on instance A, round 2
// on B, then the final round on both at once (duplicates) until one
// answers booked. Every error must be a retryable one; it returns the
// booking id and the errors seen, by kind.
func bookThroughCrashes(cs [2]*mcp.ClientSession, name string, booked func()) (string, map[string]int, error) {
	kinds := map[string]int{}
	args := map[string]any{"topic": "crash"}
	deadline := time.Now().Add(50 * time.Second)
	retry := func(what string, f func() (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
		for {
			res, err := f()
			if err == nil {
				return res, nil
			}
			k, ok := retryable(err)
			kinds[k]++
			if !ok {
				return nil, fmt.Errorf("%s: not retryable: %v", what, err)
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s: still failing after 50 s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	r1, err := retry("round 1", func() (*mcp.CallToolResult, error) { return call(cs[0], args, "", nil) })
	if err != nil {
		return "", kinds, err
	}
	contact := mcp.InputResponseMap{"contact": accept(map[string]any{"name": name, "email": name + "@example.com"})}
	r2, err := retry("round 2", func() (*mcp.CallToolResult, error) { return call(cs[1], args, r1.RequestState, contact) })
	if err != nil {
		return "", kinds, err
	}
	sp, ok := r2.InputRequests["slot"].(*mcp.ElicitParams)
	if !ok {
		return "", kinds, fmt.Errorf("round 2 did not ask for a slot: %+v", r2)
	}
	b, _ := json.Marshal(sp.RequestedSchema)
	var sch struct {
		Properties struct {
			Slot struct {
				OneOf []struct{ Const string } `json:"oneOf"`
			} `json:"slot"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &sch); err != nil || len(sch.Properties.Slot.OneOf) == 0 {
		return "", kinds, fmt.Errorf("slot form: %s", b)
	}
	final := mcp.InputResponseMap{"slot": accept(map[string]any{"slot": sch.Properties.Slot.OneOf[0].Const, "confirm": true})}
	for {
		var ids [2]string
		var errs [2]error
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := call(cs[i], args, r2.RequestState, final)
				if err != nil {
					errs[i] = err
					return
				}
				if ids[i] = bookedID(res); ids[i] == "" {
					errs[i] = fmt.Errorf("answered without a booking: %+v", res.StructuredContent)
				}
			}()
		}
		wg.Wait()
		for i := range 2 {
			if errs[i] != nil {
				k, ok := retryable(errs[i])
				kinds[k]++
				if !ok {
					return "", kinds, fmt.Errorf("final round: not retryable: %v", errs[i])
				}
			}
		}
		if ids[0] != "" && ids[1] != "" && ids[0] != ids[1] {
			return "", kinds, fmt.Errorf("the two instances answered two bookings: %s and %s", ids[0], ids[1])
		}
		if id := ids[0] + ids[1]; id != "" {
			booked()
			if ids[0] != "" {
				return ids[0], kinds, nil
			}
			return ids[1], kinds, nil
		}
		if time.Now().After(deadline) {
			return "", kinds, fmt.Errorf("final round: not booked after 50 s: %v / %v", errs[0], errs[1])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// retryable classifies an error a user saw; ok is false for one that
// must not come from a store that went away.
func retryable(err error) (kind string, ok bool) {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError {
		return "other: " + err.Error(), false
	}
	switch {
	case strings.Contains(je.Message, "replay ledger is unavailable"):
		return "ledger_unavailable", true
	case strings.Contains(je.Message, "being carried out"):
		return "in_progress", true
	case strings.Contains(je.Message, "nothing was booked, please retry"):
		return "booking_not_saved", true
	}
	return "other: " + je.Message, false
}

// bookedID is the id of the booking a final round answered ("" when it
// did not book).
func bookedID(res *mcp.CallToolResult) string {
	bs, _ := json.Marshal(res.StructuredContent)
	var sc struct {
		Booked  bool
		Booking struct{ ID string }
	}
	_ = json.Unmarshal(bs, &sc)
	if !sc.Booked {
		return ""
	}
	return sc.Booking.ID
}
