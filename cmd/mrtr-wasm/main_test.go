package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/policies"
)

// runCLI runs the command from the repository root, as CI does, and
// returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Chdir(wd) }()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// writeFile writes a temporary file and returns its absolute path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// policyDir copies the shipped policies to a temporary directory, with
// edits (file -> content).
func policyDir(t *testing.T, edits map[string]string) string {
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
		if c, ok := edits[p]; ok {
			b = []byte(c)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, p), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, c := range edits {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestUsage(t *testing.T) {
	if code, _, stderr := runCLI(t); code != exitUsage || !strings.Contains(stderr, "Usage:") {
		t.Errorf("no args: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "frobnicate"); code != exitUsage || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown: %d %q", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "help"); code != exitOK || !strings.Contains(stdout, "mrtr-wasm lint") {
		t.Errorf("help: %d %q", code, stdout)
	}
	if code, _, _ := runCLI(t, "lint", "-h"); code != exitOK {
		t.Errorf("lint -h: %d", code)
	}
	if code, _, stderr := runCLI(t, "lint", "--bogus", "x.json"); code != exitUsage || !strings.Contains(stderr, "bogus") {
		t.Errorf("bad flag: %d %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "policy"); code != exitUsage {
		t.Errorf("policy: %d", code)
	}
	if code, _, stderr := runCLI(t, "policy", "frob"); code != exitUsage || !strings.Contains(stderr, `unknown subcommand "frob"`) {
		t.Errorf("policy frob: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "proxy", "--tools-min-ttl", "-1s", "--", "true"); code != exitUsage || !strings.Contains(stderr, "--tools-min-ttl") {
		t.Errorf("proxy --tools-min-ttl -1s: %d %q", code, stderr)
	}
	// A limit that a negative or zero value would turn off is refused.
	for _, args := range [][]string{
		{"serve", "--session-idle", "-1s"},
		{"serve", "--max-sessions", "-1"},
		{"serve", "--state-ttl", "0s"},
		{"proxy", "--session-idle", "-1s", "--", "true"},
		{"proxy", "--max-children", "0", "--", "true"},
		{"proxy", "--upstream-timeout", "-1s", "--", "true"},
	} {
		if code, _, stderr := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, args[1]) {
			t.Errorf("%v: %d %q", args, code, stderr)
		}
	}
}

// TestUsageNamesEveryCommand: usage and the package doc name every command
// of the dispatcher (serve included), and every name in the table reaches
// its command.
func TestUsageNamesEveryCommand(t *testing.T) {
	_, usage, _ := runCLI(t, "help")
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range commands {
		if subs := subcommands[c.name]; subs != nil {
			for _, s := range subs {
				names = append(names, c.name+" "+s.name)
			}
			continue
		}
		names = append(names, c.name)
	}
	if !slices.Contains(names, "serve") || !slices.Contains(names, "policy build") {
		t.Fatalf("the dispatcher lost a command: %v", names)
	}
	for _, n := range names {
		want := regexp.MustCompile(`(?m)^(//)?\s+mrtr-wasm ` + n + `( |$)`)
		if !want.MatchString(usage) {
			t.Errorf("usage does not name %q:\n%s", n, usage)
		}
		if !want.MatchString(string(doc)) {
			t.Errorf("doc.go does not name %q", n)
		}
		// "-h" reaches the command itself (exit 0), not the unknown-command path.
		var stdout, stderr bytes.Buffer
		if code := run(append(strings.Fields(n), "-h"), &stdout, &stderr); code != exitOK || strings.Contains(stderr.String(), "unknown") {
			t.Errorf("%s -h: %d %q", n, code, stderr.String())
		}
	}
	// Every command line in usage and doc.go is one the dispatcher runs.
	for _, m := range regexp.MustCompile(`(?m)^(?://)?\s+mrtr-wasm (\w+)`).FindAllStringSubmatch(usage+string(doc), -1) {
		if !slices.ContainsFunc(commands, func(c command) bool { return c.name == m[1] }) {
			t.Errorf("usage or doc.go names %q, which the dispatcher does not run", m[1])
		}
	}
}

func TestKeygen(t *testing.T) {
	code, out1, _ := runCLI(t, "keygen")
	_, out2, _ := runCLI(t, "keygen")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	re := regexp.MustCompile(`^k4\.local\.[A-Za-z0-9_-]{43}\n$`)
	if !re.MatchString(out1) || !re.MatchString(out2) || out1 == out2 {
		t.Fatalf("keys %q %q", out1, out2)
	}
	k, err := host.ParseKeys(out1 + out2)
	if err != nil || k.Len() != 2 {
		t.Fatalf("the keys do not parse as MRTR_KEYS: %v", err)
	}
	if code, _, _ := runCLI(t, "keygen", "extra"); code != exitUsage {
		t.Errorf("keygen extra: %d", code)
	}
}

func TestParseFlagsAnywhere(t *testing.T) {
	code, stdout, stderr := runCLI(t, "lint", "testdata/tools/demo.json", "--format", "json", "--engine", "native")
	if code != exitOK || !strings.Contains(stdout, `"findings": []`) {
		t.Fatalf("%d %q %q", code, stdout, stderr)
	}
}
