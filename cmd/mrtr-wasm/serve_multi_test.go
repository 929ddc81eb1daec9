package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
)

// The multi-instance test shares a real Redis and PostgreSQL
// (testenv: skipped without them, failed under MRTR_REQUIRE_SERVICES=1).
const pgPassword = "pgpw-marker-7c1d" // trust auth ignores it; logs must not show it

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sharedPostgres makes a schema of the test's own and returns the --crm
// setting that points at it (with a password, to check that it is never
// logged) and a connection to inspect it. The schema is dropped at the end.
func sharedPostgres(t *testing.T) (setting, schema string, db *sql.DB) {
	t.Helper()
	testenv.Require(t, testenv.Postgres)
	base := testenv.PostgresURL()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("the test PostgreSQL URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		t.Fatalf("PostgreSQL does not answer (want 127.0.0.1:5432, trust auth, database test; CI checks pg_isready -h 127.0.0.1 -p 5432): %v", err)
	}
	schema = "mrtr_multi_" + randHex(8)
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer db.Close()
		if _, err := db.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Errorf("dropping %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	if _, has := u.User.Password(); !has {
		u.User = url.UserPassword(u.User.Username(), pgPassword)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema, db
}

// sharedRedis returns a --ledger setting under a prefix of the test's own
// and deletes the prefix's keys at the end.
func sharedRedis(t *testing.T) string {
	t.Helper()
	testenv.Require(t, testenv.Redis)
	prefix := "mrtr-multi-test:" + randHex(8) + ":"
	opts, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		t.Fatalf("Redis accepts connections but does not answer PING: %v", err)
	}
	t.Cleanup(func() {
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleaning %s*: %v", prefix, err)
			return
		}
		if len(keys) == 0 {
			t.Errorf("no ledger entry under %s*: the instances did not use the shared ledger", prefix)
			return
		}
		if err := c.Del(ctx, keys...).Err(); err != nil {
			t.Errorf("cleaning %s*: %v", prefix, err)
		}
	})
	sep := "?"
	if strings.Contains(testenv.RedisURL(), "?") {
		sep = "&"
	}
	return testenv.RedisURL() + sep + "prefix=" + url.QueryEscape(prefix)
}

// metricValue reads one sample from a Prometheus text page (0 if absent).
func metricValue(t *testing.T, page, sample string) float64 {
	t.Helper()
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// Two instances with the same keys, one ledger in Redis and one CRM in
// PostgreSQL act as one server: any round may land on either.
func TestServeTwoInstancesShareCRMAndLedger(t *testing.T) {
	crmSetting, schema, db := sharedPostgres(t)
	ledgerSetting := sharedRedis(t)
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte(host.GenerateKey()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// startServe writes a key file of its own; the later --keys wins (the
	// flag package keeps the last value), so both share this one.
	shared := []string{"--keys", keys, "--ledger", ledgerSetting, "--crm", crmSetting}
	a := startServe(t, shared...)
	b := startServe(t, shared...)
	inst := map[string]*served{"A": a, "B": b}

	aliceA := connect(t, a, tokAlice, true, nil)
	aliceB := connect(t, b, tokAlice, true, nil)
	alice := map[string]*mcp.ClientSession{"A": aliceA, "B": aliceB}
	bobB := connect(t, b, tokBob, true, nil)
	args := map[string]any{"topic": markTopic}
	rows := func() (n int, id string) {
		t.Helper()
		err := db.QueryRow(`SELECT COUNT(*), COALESCE(MIN(id), '') FROM `+schema+`.bookings`).Scan(&n, &id)
		if err != nil {
			t.Fatal(err)
		}
		return n, id
	}

	// Round 1 on A, round 2 on B, the final round on A.
	r1 := first(t, aliceA, args)
	r2, err := call(aliceB, args, r1.RequestState, mcp.InputResponseMap{"contact": accept(map[string]any{"name": markName, "email": markEmail})})
	r2 = needsInput(t, r2, err, "slot")
	if n, _ := rows(); n != 0 {
		t.Fatal("a booking was written before every answer was in")
	}
	finalResponses := mcp.InputResponseMap{"slot": accept(map[string]any{"slot": firstSlot(t, r2.InputRequests["slot"].(*mcp.ElicitParams).RequestedSchema), "confirm": true})}
	r3, err := call(aliceA, args, r2.RequestState, finalResponses)
	if err != nil || r3.NeedsInput() || r3.IsError {
		t.Fatalf("final round on A: %v %+v", err, r3)
	}
	id := bookedID(r3)
	if n, rowID := rows(); id == "" || n != 1 || rowID != id {
		t.Fatalf("after the final round: booking %q, %d rows in PostgreSQL (first %q)", id, n, rowID)
	}

	// The same accepted final retry, 50 times at once, alternating A and B.
	var wg sync.WaitGroup
	got := make([]string, 50)
	errs := make([]error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := aliceA
			if i%2 == 1 {
				cs = aliceB
			}
			res, err := call(cs, args, r2.RequestState, finalResponses)
			if err != nil {
				errs[i] = err
				return
			}
			got[i] = bookedID(res)
		}()
	}
	wg.Wait()
	for i := range 50 {
		if errs[i] != nil {
			t.Errorf("replay %d (on %s): %v", i, "AB"[i%2:i%2+1], errs[i])
		} else if got[i] != id {
			t.Errorf("replay %d (on %s) returned booking %q, want %q", i, "AB"[i%2:i%2+1], got[i], id)
		}
	}
	if n, rowID := rows(); n != 1 || rowID != id {
		t.Fatalf("after 50 replays on two instances: %d rows in PostgreSQL (first %q), want exactly 1 (%q)", n, rowID, id)
	}
	// The shared ledger ran the effect once; everything else was a replay.
	var run, replay float64
	for _, s := range inst {
		page := get(t, s.base+"/metrics", "")
		run += metricValue(t, page, `mrtr_effects_total{result="run",tool="book_demo_call"}`)
		replay += metricValue(t, page, `mrtr_effects_total{result="replay",tool="book_demo_call"}`)
	}
	if run != 1 || replay != 50 {
		t.Fatalf("effects across both instances: %v run, %v replayed; want 1 and 50", run, replay)
	}

	for name, cs := range alice {
		if bs := bookings(t, cs); len(bs) != 1 || bs[0]["id"] != id || bs[0]["email"] != markEmail {
			t.Fatalf("list_bookings on %s: %v", name, bs)
		}
	}
	if bs := bookings(t, bobB); len(bs) != 0 {
		t.Fatalf("bob sees %v", bs)
	}

	// connect_calendar: asked on A, the page submitted on B, resumed on B;
	// the link stays single-use on A.
	t.Run("connect_calendar across instances", func(t *testing.T) {
		ctx := context.Background()
		c1, err := aliceA.CallTool(ctx, &mcp.CallToolParams{Name: "connect_calendar", Arguments: map[string]any{}})
		c1 = needsInput(t, c1, err, "calendar")
		link := c1.InputRequests["calendar"].(*mcp.ElicitParams).URL
		path, ok := strings.CutPrefix(link, a.base)
		if !ok || !strings.HasPrefix(path, "/connect/") {
			t.Fatalf("want a link to A's /connect page, got %q", link)
		}
		if code, body := postForm(t, b.base+path, url.Values{"api_key": {markCalKey}}); code != http.StatusOK || !strings.Contains(body, "connected") {
			t.Fatalf("alice's link on B: %d %s", code, body)
		}
		consent := mcp.InputResponseMap{"calendar": &mcp.ElicitResult{Action: "accept"}}
		c2, err := aliceB.CallTool(ctx, &mcp.CallToolParams{Name: "connect_calendar", Arguments: map[string]any{}, RequestState: c1.RequestState, InputResponses: consent})
		if err != nil || c2.NeedsInput() || c2.IsError {
			t.Fatalf("resumed on B: %v %+v", err, c2)
		}
		if code, _ := postForm(t, a.base+path, url.Values{"api_key": {"another"}}); code != http.StatusGone {
			t.Fatalf("the used link on A: %d", code)
		}
		var stored int
		if err := db.QueryRow(`SELECT COUNT(*) FROM `+schema+`.calendar_keys WHERE principal = 'alice' AND api_key = $1`, markCalKey).Scan(&stored); err != nil || stored != 1 {
			t.Fatalf("the calendar key in PostgreSQL: %d %v", stored, err)
		}
	})

	// Both instances name the shared CRM in their logs, without the
	// password; no answer or key reaches a log line.
	where := fmt.Sprintf(`"crm":"postgres://postgres@127.0.0.1:5432/test?search_path=%s"`, schema)
	for name, s := range inst {
		logs := s.logs.String()
		if os.Getenv("MRTR_TEST_POSTGRES") == "" && !strings.Contains(logs, where) {
			t.Errorf("%s does not log %s", name, where)
		}
		for _, secret := range []string{pgPassword, markName, markEmail, markCalKey, tokAlice, r2.RequestState} {
			if strings.Contains(logs, secret) {
				t.Errorf("a log line of %s contains %q", name, secret)
			}
		}
	}
}

// An unreachable PostgreSQL stops the start with an error that names the
// flag and not the password.
func TestServeCRMPostgresUnreachable(t *testing.T) {
	var logs syncBuffer
	args := []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--wasm-cache", sharedCache,
		"--crm", "postgres://postgres:" + pgPassword + "@127.0.0.1:1/test?sslmode=disable"}
	code := serve(context.Background(), args, nil, &logs, &logs, func(string) { t.Error("the server started") })
	out := logs.String()
	if code != 1 || !strings.Contains(out, "--crm: ") || strings.Contains(out, pgPassword) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
