package host

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/crypto/blake2b"
)

func keyOf(b byte) string {
	return "k4.local." + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))
}

// lidOf is the PASERK k4.lid of a k4.local key, computed here from the
// PASERK rules (BLAKE2b-264 of "k4.lid." and the key string).
func lidOf(t testing.TB, key string) string {
	t.Helper()
	h, err := blake2b.New(33, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte("k4.lid." + key))
	return "k4.lid." + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func TestParseKeysAccepts(t *testing.T) {
	a, b, c := keyOf(1), keyOf(2), keyOf(3)
	for name, in := range map[string]string{
		"commas":            a + "," + b + "," + c,
		"spaces and tabs":   a + " " + b + "\t" + c,
		"new lines":         a + "\n" + b + "\r\n" + c + "\n",
		"mixed":             "  " + a + " ,\n\n" + b + ",,\t" + c + " ",
		"comments in files": "# primary since 2026-07\n" + a + "\n   # old, remove after 2026-08\n" + b + "\n" + c + "\n#end",
	} {
		k, err := ParseKeys(in)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if k.Len() != 3 || k.list()[0] != a || k.list()[1] != b || k.list()[2] != c {
			t.Errorf("%s: keys out of order or lost (%d)", name, k.Len())
		}
	}
	// A real vector: the PASETO v4 test key.
	if _, err := ParseKeys(vecKeyA); err != nil {
		t.Error(err)
	}
}

func TestParseKeysRejectsWithoutEchoing(t *testing.T) {
	real := GenerateKey()
	body := strings.TrimPrefix(real, "k4.local.")
	raw, _ := base64.RawURLEncoding.DecodeString(body)
	for name, in := range map[string]string{
		"empty":           "",
		"only comments":   "# nothing\n#here\n",
		"only separators": " ,\n\t, ",
		"public key":      "k4.public." + body,
		"v3 key":          "k3.local." + body,
		"upper case":      "K4.LOCAL." + body,
		"no prefix":       body,
		"lid":             lidOf(t, real),
		"short":           "k4.local." + base64.RawURLEncoding.EncodeToString(raw[:31]),
		"long":            "k4.local." + base64.RawURLEncoding.EncodeToString(append(raw, 0)),
		"padding":         "k4.local." + base64.URLEncoding.EncodeToString(raw),
		"std alphabet":    "k4.local." + strings.NewReplacer("-", "+", "_", "/").Replace(body) + "+/",
		"not base64":      "k4.local." + body[:40] + "!!!!",
		"duplicate":       real + "," + keyOf(9) + "\n" + real,
		"second is bad":   real + ",k4.local.short",
		"trailing junk":   real + "x",
		"comment on line": real + " # primary",
	} {
		_, err := ParseKeys(in)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, body) || strings.Contains(msg, body[:12]) || strings.Contains(msg, body[len(body)-12:]) {
			t.Errorf("%s: error %q shows the key", name, msg)
		}
	}
	// A key is never named by its text, only by its position.
	_, err := ParseKeys(keyOf(7) + "," + keyOf(7))
	if err == nil || !strings.Contains(err.Error(), "2") {
		t.Errorf("duplicate: %v", err)
	}
}

func TestKeysFromEnvAndFile(t *testing.T) {
	real := GenerateKey()
	body := strings.TrimPrefix(real, "k4.local.")

	t.Setenv("MRTR_KEYS", "")
	if k, err := KeysFromEnv(); k != nil || err != nil {
		t.Errorf("empty MRTR_KEYS: %v %v", k, err)
	}
	os.Unsetenv("MRTR_KEYS")
	if k, err := KeysFromEnv(); k != nil || err != nil {
		t.Errorf("unset MRTR_KEYS: %v %v", k, err)
	}
	t.Setenv("MRTR_KEYS", real+", "+keyOf(5))
	k, err := KeysFromEnv()
	if err != nil || k.Len() != 2 || k.list()[0] != real {
		t.Errorf("MRTR_KEYS: %v %v", k, err)
	}
	t.Setenv("MRTR_KEYS", real+"=")
	_, err = KeysFromEnv()
	if err == nil || !strings.Contains(err.Error(), "MRTR_KEYS") || strings.Contains(err.Error(), body) {
		t.Errorf("bad MRTR_KEYS: %v", err)
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "keys")
	if err := os.WriteFile(good, []byte("# rotated 2026-07-28\n"+real+"\n# old\n"+keyOf(6)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err = LoadKeyFile(good)
	if err != nil || k.Len() != 2 || k.list()[0] != real {
		t.Errorf("key file: %v %v", k, err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte(real+"\n"+real+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadKeyFile(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), body) {
		t.Errorf("bad key file: %v", err)
	}
	if _, err := LoadKeyFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing key file must fail")
	}
}

func TestKeyringNeverPrintsKeys(t *testing.T) {
	real := GenerateKey()
	body := strings.TrimPrefix(real, "k4.local.")
	k, err := ParseKeys(real + "," + keyOf(4))
	if err != nil {
		t.Fatal(err)
	}
	leaks := func(s string) bool {
		for _, shown := range []string{body, body[:16], "k4.local"} {
			if strings.Contains(s, shown) || strings.Contains(s, hex.EncodeToString([]byte(shown))) {
				return true
			}
		}
		return false
	}
	type config struct {
		Name string
		Keys *Keyring
	}
	type byValue struct {
		Keys Keyring
	}
	outputs := map[string]string{} // how it was printed → what it printed
	values := map[string]any{
		"*Keyring":              k,
		"struct with *Keyring":  config{"srv", k},
		"*struct with *Keyring": &config{"srv", k},
		"[]*Keyring":            []*Keyring{k},
		"map with *Keyring":     map[string]any{"keys": k},
		"Keyring (by value)":    *k,
		"struct with Keyring":   byValue{*k},
	}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			outputs[verb+" of "+name] = fmt.Sprintf(verb, v)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outputs["json.Marshal of "+name] = string(b)
	}
	outputs["Sprint"], outputs["Sprintln"] = fmt.Sprint(k), fmt.Sprintln(k)
	outputs["String"], outputs["GoString"] = k.String(), k.GoString()
	for hname, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog JSON": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		for name, log := range map[string]func(*slog.Logger){
			"*Keyring":             func(l *slog.Logger) { l.Info("starting", "keys", k) },
			"slog.Any":             func(l *slog.Logger) { l.Info("starting", slog.Any("keys", k)) },
			"group":                func(l *slog.Logger) { l.Info("starting", slog.Group("g", "k", k)) },
			"struct with *Keyring": func(l *slog.Logger) { l.Info("starting", "config", config{"srv", k}) },
			"Keyring (by value)":   func(l *slog.Logger) { l.Info("starting", "keys", *k) },
		} {
			var b bytes.Buffer
			log(slog.New(newHandler(&b)))
			outputs[hname+" of "+name] = b.String()
		}
	}
	var leaked []string
	for how, s := range outputs {
		if leaks(s) {
			leaked = append(leaked, how) // never the output itself: it holds the key
		}
	}
	sort.Strings(leaked)
	for _, how := range leaked {
		t.Errorf("%s prints the keys", how)
	}
	if !strings.Contains(fmt.Sprint(k), "2 keys") {
		t.Errorf("String %q should say how many keys", k)
	}
	var nilK *Keyring
	if s := fmt.Sprint(nilK); leaks(s) || s == "" {
		t.Errorf("nil keyring prints %q", s)
	}
}

func TestGenerateKey(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		k := GenerateKey()
		if seen[k] {
			t.Fatalf("GenerateKey repeated %s", lidOf(t, k))
		}
		seen[k] = true
		if err := checkKey(k); err != nil {
			t.Fatalf("GenerateKey made an invalid key: %v", err)
		}
	}
	if a, b := NewKeyring(), NewKeyring(); a.list()[0] == b.list()[0] || a.Len() != 1 {
		t.Error("NewKeyring must make a fresh key")
	}
}

func TestKeyIDs(t *testing.T) {
	// The vectors' key and its id recorded in testdata/vectors.
	if got := lidOf(t, vecKeyA); got != "k4.lid.iVtYQDjr5gEijCSjJC3fQaJm7nCeQSeaty0Jixy8dbsk" {
		t.Fatalf("lidOf is wrong: %s", got)
	}
	forEngines(t, func(t *testing.T, eng Engine) {
		a, b := GenerateKey(), GenerateKey()
		k, _ := ParseKeys(a + "," + b)
		g := newGuard(t, eng, WithKeys(k))
		ids := g.KeyIDs()
		if len(ids) != 2 || ids[0] != lidOf(t, a) || ids[1] != lidOf(t, b) {
			t.Errorf("KeyIDs %v, want the k4.lid of each key, primary first", ids)
		}
		ids[0] = "changed"
		if g.KeyIDs()[0] == "changed" {
			t.Error("KeyIDs returns the guard's own slice")
		}
		// The state's footer names the primary.
		st := ask(t, g, bookReq("alice"), []InputRequest{contactInput()}).RequestState
		footer, _ := base64.RawURLEncoding.DecodeString(st[strings.LastIndexByte(st, '.')+1:])
		if string(footer) != `{"kid":"`+lidOf(t, a)+`"}` {
			t.Errorf("footer %s", footer)
		}
	})
}

func TestKeyRotation(t *testing.T) {
	forEngines(t, func(t *testing.T, eng Engine) {
		ctx := context.Background()
		oldKey, newKey := GenerateKey(), GenerateKey()
		ring := func(keys ...string) *Keyring {
			k, err := ParseKeys(strings.Join(keys, ","))
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		g := newGuard(t, eng, WithKeys(ring(oldKey)), WithPoolSize(2))
		fillPool(t, g, 2)
		req := bookReq("alice")
		oldState := ask(t, g, req, []InputRequest{contactInput()}).RequestState

		// Step 1: the new key seals, the old one still opens.
		if err := g.SetKeys(ctx, ring(newKey, oldKey)); err != nil {
			t.Fatal(err)
		}
		if ids := g.KeyIDs(); len(ids) != 2 || ids[0] != lidOf(t, newKey) {
			t.Errorf("KeyIDs after rotation: %v", ids)
		}
		newState := ask(t, g, req, []InputRequest{contactInput()}).RequestState
		if !strings.HasSuffix(newState, base64.RawURLEncoding.EncodeToString([]byte(`{"kid":"`+lidOf(t, newKey)+`"}`))) {
			t.Errorf("a new state is not sealed under the new primary")
		}
		ps, release := eachInstance(t, g, 2)
		for _, s := range ps {
			for _, st := range []string{oldState, newState} {
				if out, err := s.resume(retry(req, st, annValid)); err != nil || out.Status != Complete {
					t.Errorf("instance %d, while both keys are listed: %v %+v", s.n, err, out)
				}
			}
		}
		release()

		// Step 2: the old key is gone; its states stop opening on every
		// instance, before their next call.
		if err := g.SetKeys(ctx, ring(newKey)); err != nil {
			t.Fatal(err)
		}
		ps, release = eachInstance(t, g, 2)
		for _, s := range ps {
			_, err := s.resume(retry(req, oldState, annValid))
			wantState(t, err, "unknown_key")
			if out, err := s.resume(retry(req, newState, annValid)); err != nil || out.Status != Complete {
				t.Errorf("instance %d: the new key's state: %v", s.n, err)
			}
		}
		release()
		_, err := g.Resume(ctx, retry(req, oldState, annValid))
		wantState(t, err, "unknown_key")

		// A bad keyring is refused and the guard keeps the keys it had.
		if err := g.SetKeys(ctx, &Keyring{}); err == nil {
			t.Error("an empty keyring was accepted")
		}
		if err := g.SetKeys(ctx, &Keyring{r: &keyList{keys: []string{"k4.local.short"}}}); err == nil {
			t.Error("an invalid key was accepted")
		}
		if out := resume(t, g, retry(req, newState, annValid)); out.Status != Complete {
			t.Errorf("after a refused SetKeys: %+v", out)
		}
	})
}

// pinned runs calls on one given instance of the pool.
type pinned struct {
	g *Guard
	s *slot
	n int
}

func (p *pinned) resume(req *Request) (*Outcome, error) {
	env, err := p.g.envelope("resume", req)
	if err != nil {
		return nil, err
	}
	env = append(env, '}')
	out, err := p.g.invoke(context.Background(), p.s, env)
	if err != nil {
		return nil, err
	}
	var r response
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, err
	}
	if !r.OK {
		return nil, r.err()
	}
	return &Outcome{Status: r.Status, OperationID: r.OperationID, Round: r.Round}, nil
}

// eachInstance takes n distinct instances from the pool (through acquire,
// which brings their configuration up to date); release gives them back.
func eachInstance(t testing.TB, g *Guard, n int) (ps []*pinned, release func()) {
	t.Helper()
	for i := range n {
		s, err := g.acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if s.gen != g.gen.Load() {
			t.Fatalf("instance %d still has keys of generation %d, current %d", i, s.gen, g.gen.Load())
		}
		ps = append(ps, &pinned{g: g, s: s, n: i})
	}
	if n == 2 && ps[0].s.inst == ps[1].s.inst {
		t.Fatal("the same instance twice")
	}
	return ps, func() {
		for _, p := range ps {
			g.release(p.s)
		}
	}
}
