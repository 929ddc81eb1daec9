package policy

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/policies"
)

// copyPolicies writes the shipped policy directory to a temporary one
// and applies edits (file -> content; "" removes the file).
func copyPolicies(t testing.TB, edits map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(policies.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(policies.FS, p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, content := range edits {
		if content == "" {
			if err := os.Remove(filepath.Join(dir, p)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readPolicyFile(t testing.TB, name string) string {
	t.Helper()
	b, err := fs.ReadFile(policies.FS, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantLoadError checks a load failed with one problem at file:line whose
// message contains msg.
func wantLoadError(t *testing.T, err error, file string, line int, msg string) {
	t.Helper()
	es, ok := AsLoadErrors(err)
	if !ok {
		t.Fatalf("want a load error, got %v", err)
	}
	for _, e := range es {
		if strings.HasSuffix(e.File, file) && e.Line == line && strings.Contains(e.Msg, msg) {
			return
		}
	}
	t.Fatalf("want %s:%d: ...%s..., got:\n%v", file, line, msg, err)
}

func TestDefaultAndShippedData(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"demo", "strict"} {
		e, err := Default(ctx, WithData(name))
		if err != nil {
			t.Fatal(name, err)
		}
		info := e.Info()
		if info.DataFile != "policies/data/"+name+".json" || len(info.Revision) != 16 {
			t.Errorf("%s: %+v", name, info)
		}
		if _, ok := e.Data().Tools["book_demo_call"]; !ok {
			t.Errorf("%s: no rule for book_demo_call", name)
		}
	}
	e, err := Default(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.Info().DataFile != "policies/data/demo.json" {
		t.Errorf("default data %s", e.Info().DataFile)
	}
	if c := e.cur.Load(); c.principal || c.claims || !c.scopes {
		t.Errorf("the shipped policy reads input.scopes only (class_scopes), but reads says principal %v, scopes %v, claims %v", c.principal, c.scopes, c.claims)
	}
}

func TestRegoTestsPass(t *testing.T) {
	res, err := RunDefaultTests(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) < 30 {
		t.Fatalf("only %d Rego tests", len(res))
	}
	files := map[string]bool{}
	for _, r := range res {
		if r.Fail || r.Error != nil {
			t.Errorf("%s.%s: fail %v, error %v", r.Package, r.Name, r.Fail, r.Error)
		}
		files[filepath.Base(r.Location.File)] = true
	}
	// Each .rego has its _test.rego beside it, with tests in it.
	names, _ := fs.Glob(policies.FS, "*.rego")
	for _, n := range names {
		if strings.HasSuffix(n, "_test.rego") {
			continue
		}
		if !files[strings.TrimSuffix(n, ".rego")+"_test.rego"] {
			t.Errorf("%s has no tests beside it", n)
		}
	}
}

func TestRegoTestsCatchAWrongPolicy(t *testing.T) {
	// The demo data now lets book_demo_call ask for a phone: the shipped
	// tests say that is wrong.
	demo := readPolicyFile(t, "data/demo.json")
	demo = strings.Replace(demo, `"classes": ["contact.name", "contact.email", "date", "choice"]`, `"classes": ["contact.name", "contact.email", "contact.phone", "date", "choice"]`, 1)
	dir := copyPolicies(t, map[string]string{"data/demo.json": demo})
	res, err := RunTests(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, r := range res {
		if r.Fail {
			failed++
			if r.Name != "test_demo_refuses_other_fields_and_forbidden_classes" && r.Name != "test_messages_name_the_rule" {
				t.Errorf("unexpected failure %s", r.Name)
			}
		}
	}
	if failed == 0 {
		t.Fatal("no test failed")
	}
}

func TestBadPolicyFailsAtLoadWithFileAndLine(t *testing.T) {
	ctx := context.Background()
	ask := readPolicyFile(t, "ask.rego")
	lines := strings.Split(ask, "\n")
	at := func(sub string) int {
		for i, l := range lines {
			if strings.Contains(l, sub) {
				return i + 1
			}
		}
		t.Fatalf("no %q in ask.rego", sub)
		return 0
	}
	for _, tc := range []struct {
		name, file, content string
		line                int
		msg                 string
	}{
		{"syntax", "ask.rego", strings.Replace(ask, "default allow := false", "default allow := ", 1), at("default allow := false"), "rego_parse_error"},
		{"time-dependent builtin", "ask.rego", strings.Replace(ask, "allow if {\n\tcount(deny) == 0", "allow if {\n\ttime.now_ns() > 0\n\tcount(deny) == 0", 1), at("allow if {") + 1, "undefined function time.now_ns"},
		{"http.send", "ask.rego", ask + "\nx := http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1/\"})\n", len(lines) + 1, "undefined function http.send"},
		{"sprintf verb", "ask.rego", ask + "\ny := sprintf(\"%.2f\", [1])\n", len(lines) + 1, `only %s, %d and %v`},
		{"unsafe var", "ask.rego", ask + "\nz if { q > 1 }\n", len(lines) + 1, "var q is unsafe"},
		{"no entrypoint", "resume.rego", "package mrtr.resume\n\nother := 1\n", 0, "no rule data.mrtr.resume.decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyPolicies(t, map[string]string{tc.file: tc.content})
			_, err := Load(ctx, dir)
			file := tc.file
			if tc.line == 0 {
				file = filepath.Base(dir)
			}
			wantLoadError(t, err, file, tc.line, tc.msg)
			if tc.line > 0 && !strings.Contains(err.Error(), filepath.Join(dir, tc.file)+":") {
				t.Errorf("the error names no file: %v", err)
			}
		})
	}
}

func TestBadDataFailsAtLoadWithLine(t *testing.T) {
	ctx := context.Background()
	demo := readPolicyFile(t, "data/demo.json")
	line := func(s, sub string) int {
		i := strings.Index(s, sub)
		if i < 0 {
			t.Fatalf("no %q", sub)
		}
		return strings.Count(s[:i], "\n") + 1
	}
	for _, tc := range []struct {
		name, data string
		line       int
		msg        string
	}{
		{"not JSON", strings.Replace(demo, `"version": 1,`, `"version": 1`, 1), line(demo, `"description"`), "not valid JSON"},
		{"unknown member", strings.Replace(demo, `"kinds": ["url"],`, `"kinds": ["url"], "hosts": [],`, 1), line(demo, `"kinds": ["url"]`), "additional properties 'hosts'"},
		{"wrong type", strings.Replace(demo, `"max_rounds": 3,`, `"max_rounds": "3",`, 1), line(demo, `"max_rounds": 3,`), "want integer"},
		{"unknown kind", strings.Replace(demo, `"kinds": ["url"]`, `"kinds": ["link"]`, 1), line(demo, `"kinds": ["url"]`), "/tools/connect_calendar/kinds/0"},
		{"missing default", strings.Replace(demo, `"default": {`, `"fallback": {`, 1), 1, "missing property 'default'"},
		{"unknown class", strings.Replace(demo, `"contact.email", "date"`, `"contact.mail", "date"`, 1), line(demo, `"contact.email", "date"`), `unknown class "contact.mail"`},
		{"rounds out of bounds", strings.Replace(demo, `"max_rounds": 3,`, `"max_rounds": 7,`, 1), line(demo, `"max_rounds": 3,`), "outside limits.max_rounds (1 to 5)"},
		{"bounds upside down", strings.Replace(demo, `"ttl_seconds": {"min": 60, "max": 900}`, `"ttl_seconds": {"min": 900, "max": 60}`, 1), line(demo, `"ttl_seconds": {"min"`), "min 900 is above max 60"},
		{"duplicate tool", strings.Replace(demo, `"list_bookings": {`, `"book_demo_call": {`, 1), line(demo, `"list_bookings": {`), "/tools/book_demo_call is given twice"},
		{"bad glob", strings.Replace(demo, `"list_bookings": {`, `"list_[bookings": {`, 1), line(demo, `"list_bookings": {`), "not a valid glob"},
		{"url without hosts", strings.Replace(demo, `"url_hosts": ["localhost", "127.0.0.1"],`, ``, 1), line(demo, `"kinds": ["url"]`), "url_hosts is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyPolicies(t, map[string]string{"data/demo.json": tc.data})
			_, err := Load(ctx, dir)
			wantLoadError(t, err, "data/demo.json", tc.line, tc.msg)
		})
	}
	// A glob that matches none of the server's tools.
	globs := strings.Replace(demo, `"list_bookings": {`, `"admin_*": {"kinds": []},
    "list_bookings": {`, 1)
	dir := copyPolicies(t, map[string]string{"data/demo.json": globs})
	if _, err := Load(ctx, dir); err != nil {
		t.Fatalf("without known tools the glob is fine: %v", err)
	}
	_, err := Load(ctx, dir, WithKnownTools("book_demo_call", "list_bookings", "connect_calendar"))
	wantLoadError(t, err, "data/demo.json", line(globs, `"admin_*"`), `tool glob "admin_*" matches no known tool`)
	if _, err := Load(ctx, dir, WithKnownTools("admin_users")); err != nil {
		t.Fatal(err)
	}
	// Missing files.
	_, err = Load(ctx, dir, WithDataFile(filepath.Join(dir, "nope.json")))
	wantLoadError(t, err, "nope.json", 0, "cannot read the data file")
	_, err = Load(ctx, filepath.Join(dir, "nope"))
	wantLoadError(t, err, "nope", 0, "cannot read the policy directory")
}

// readDecision reads v as the policy package does: through the guard core.
func readDecision(t *testing.T, v any) *Decision {
	t.Helper()
	doc, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := (*host.PolicyQuery)(nil).ReadDecision(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	var d Decision
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func TestUndefinedNeverAllows(t *testing.T) {
	for name, v := range map[string]any{
		"not an object":     "yes",
		"allow only":        map[string]any{"allow": true},
		"allow, no limits":  map[string]any{"allow": true, "deny": []any{}},
		"allow and a deny":  map[string]any{"allow": true, "deny": []any{map[string]any{"code": "x"}}, "max_rounds": json.Number("1"), "ttl_seconds": json.Number("1")},
		"allow not boolean": map[string]any{"allow": "true", "deny": []any{}, "max_rounds": json.Number("1"), "ttl_seconds": json.Number("1")},
		"deny not a list":   map[string]any{"allow": true, "deny": "none", "max_rounds": json.Number("1"), "ttl_seconds": json.Number("1")},
	} {
		d := readDecision(t, v)
		if d.Allow || len(d.Deny) == 0 || d.Host().Allow {
			t.Errorf("%s: %+v", name, d)
		}
	}
	ok := readDecision(t, map[string]any{"allow": true, "deny": []any{}, "max_rounds": json.Number("2"), "ttl_seconds": json.Number("60")})
	if !ok.Allow || ok.MaxRounds != 2 || ok.TTLSeconds != 60 {
		t.Errorf("a full allow: %+v", ok)
	}

	// A policy whose decision is undefined (the rule's body fails).
	ctx := context.Background()
	dir := copyPolicies(t, map[string]string{"resume.rego": "package mrtr.resume\n\ndecision := {\"allow\": true} if input.never\n"})
	e, err := Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Resume(ctx, &host.PolicyQuery{Target: "book_demo_call", TTL: time.Minute, MaxRounds: 3})
	if err != nil || d.Allow || d.Code != CodeUndecided {
		t.Fatalf("undefined decision: %+v %v", d, err)
	}
}

func TestMemoSeesThePrincipalOnlyWhenThePolicyDoes(t *testing.T) {
	ctx := context.Background()
	// A deployment rule of its own: bob may not ask.
	ask := readPolicyFile(t, "ask.rego") + `
violations contains tools.denial("policy.principal_blocked", "", "", "", "bob may not") if input.principal == "bob"
`
	dir := copyPolicies(t, map[string]string{"ask.rego": ask})
	e, err := Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !e.cur.Load().principal {
		t.Fatal("reads missed input.principal")
	}
	q := &host.PolicyQuery{Principal: "alice", Method: "tools/call", Target: "list_bookings", TTL: 5 * time.Minute, MaxRounds: 3}
	for i := 0; i < 2; i++ { // the second time from the memo
		q.Principal = "alice"
		if d, err := e.Ask(ctx, q); err != nil || !d.Allow {
			t.Fatalf("alice: %+v %v", d, err)
		}
		q.Principal = "bob"
		if d, err := e.Ask(ctx, q); err != nil || d.Allow || d.Code != "policy.principal_blocked" {
			t.Fatalf("bob: %+v %v", d, err)
		}
	}
}

// twoPolicies are data files A and B whose decisions for the same query
// differ in every part: a decision that mixes them is easy to see.
const (
	dataA = `{"version":1,"limits":{"max_rounds":{"min":1,"max":9},"ttl_seconds":{"min":10,"max":900}},"forbidden_classes":[],
 "default":{"kinds":["form"],"classes":["choice"],"max_rounds":1,"ttl_seconds":10},
 "tools":{"t":{"kinds":["form"],"fields":["x"],"max_rounds":2,"ttl_seconds":100}}}`
	dataB = `{"version":1,"limits":{"max_rounds":{"min":1,"max":9},"ttl_seconds":{"min":10,"max":900}},"forbidden_classes":[],
 "default":{"kinds":["form"],"classes":["choice"],"max_rounds":1,"ttl_seconds":10},
 "tools":{"t":{"kinds":["form"],"fields":["y"],"max_rounds":4,"ttl_seconds":200}}}`
)

var queryX = &host.PolicyQuery{Principal: "p", Method: "tools/call", Target: "t", TTL: 5 * time.Minute, MaxRounds: 3,
	Inputs: []host.InputRequest{host.Form("k", "?", json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`))}}

// which says whether a decision is entirely A's, entirely B's, or a mix.
func which(d *host.PolicyDecision) string {
	switch {
	case d.Allow && d.MaxRounds == 2 && d.TTL == 100*time.Second && len(d.Denials) == 0:
		return "A"
	case !d.Allow && d.MaxRounds == 4 && d.TTL == 200*time.Second && d.Code == "policy.field_not_allowed":
		return "B"
	}
	return "mix"
}

func TestReloadSwapsAtomically(t *testing.T) {
	ctx := context.Background()
	dir := copyPolicies(t, map[string]string{"data/demo.json": dataA})
	e, err := Load(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	dataPath := filepath.Join(dir, "data", "demo.json")
	var seen [2]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := *queryX
				if i%2 == 1 { // also miss the memo: full evaluations
					q.Principal = string(rune('a' + w))
					q.MaxRounds = 3 + i%5
				}
				if i%3 == 0 {
					rd, rerr := e.Resume(ctx, &host.PolicyQuery{Target: "t", TTL: q.TTL, MaxRounds: q.MaxRounds})
					// Resume has no fields: A and B differ in limits.
					if rerr != nil || !((rd.MaxRounds == 2 && rd.TTL == 100*time.Second) || (rd.MaxRounds == 4 && rd.TTL == 200*time.Second)) {
						t.Errorf("resume saw a mix: %+v %v", rd, rerr)
						return
					}
					continue
				}
				d, err := e.Ask(ctx, &q)
				if err != nil {
					t.Error(err)
					return
				}
				switch which(d) {
				case "A":
					seen[0].Add(1)
				case "B":
					seen[1].Add(1)
				default:
					t.Errorf("a decision from no single policy: %+v", d)
					return
				}
			}
		}(w)
	}
	for i := 0; i < 20; i++ {
		data := dataA
		if i%2 == 0 {
			data = dataB
		}
		if err := os.WriteFile(dataPath, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if seen[0].Load() == 0 || seen[1].Load() == 0 {
		t.Fatalf("saw A %d times and B %d times: the reloads did not show", seen[0].Load(), seen[1].Load())
	}

	// A reload that fails keeps the policy in use, whole.
	before := e.Info().Revision
	if err := os.WriteFile(dataPath, []byte(`{"version":1,`), 0o644); err != nil {
		t.Fatal(err)
	}
	err = e.Reload(ctx)
	wantLoadError(t, err, "data/demo.json", 1, "not valid JSON")
	if e.Info().Revision != before {
		t.Error("a failed reload changed the policy")
	}
	if d, err := e.Ask(ctx, queryX); err != nil || which(d) == "mix" {
		t.Fatalf("after a failed reload: %+v %v", d, err)
	}
}

// SIGHUP, sent to this process for real, reloads the policy's files.
func TestSIGHUP(t *testing.T) {
	dir := copyPolicies(t, map[string]string{"data/demo.json": dataB})
	e, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Ask(context.Background(), queryX); which(d) != "B" {
		t.Fatalf("before SIGHUP: %+v", d)
	}
	dataPath := filepath.Join(dir, "data", "demo.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan error, 4)
	stop := e.ReloadOnSIGHUP(ctx, func(err error) { hup <- err })
	defer stop()
	if err := os.WriteFile(dataPath, []byte(dataA), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-hup:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not reload")
	}
	if d, _ := e.Ask(context.Background(), queryX); which(d) != "A" {
		t.Fatalf("after SIGHUP: %+v", d)
	}
}
