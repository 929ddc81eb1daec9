package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
)

func TestPolicyTest(t *testing.T) {
	code, stdout, stderr := runCLI(t, "policy", "test")
	if code != exitOK || !strings.Contains(stdout, "PASS: ") || strings.Contains(stdout, "FAIL") {
		t.Fatalf("shipped: %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "policy", "test", "policies", "-v")
	if code != exitOK || !strings.Contains(stdout, "test_demo_book_demo_call_both_rounds") {
		t.Fatalf("a directory, verbose: %d\n%s", code, stdout)
	}

	// A failing test: exit 1 and the failing line.
	failing := "package mrtr.extra_test\n\nimport data.mrtr.ask\n\ntest_nothing_is_allowed if {\n\tnot ask.decision.allow with input as {\"method\": \"tools/call\", \"target\": \"list_bookings\", \"inputs\": {}, \"max_rounds\": 3, \"ttl_seconds\": 300}\n}\n"
	dir := policyDir(t, map[string]string{"extra_test.rego": failing})
	code, stdout, _ = runCLI(t, "policy", "test", dir)
	if code != exitFindings || !strings.Contains(stdout, "test_nothing_is_allowed: FAIL") || !strings.Contains(stdout, "extra_test.rego:6") {
		t.Errorf("failing test: %d\n%s", code, stdout)
	}

	// A syntax error: exit 2 with the file and line.
	dir = policyDir(t, map[string]string{"extra_test.rego": "package mrtr.extra_test\n\ntest_x if {\n\t1 ==\n}\n"})
	code, stdout, stderr = runCLI(t, "policy", "test", dir)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, filepath.Join(dir, "extra_test.rego")+":") {
		t.Errorf("syntax error: %d %q %q", code, stdout, stderr)
	}
	// Bad data.
	dir = policyDir(t, map[string]string{"data/strict.json": `{"version": 1}`})
	code, _, stderr = runCLI(t, "policy", "test", dir)
	if code != exitUsage || !strings.Contains(stderr, filepath.Join(dir, "data", "strict.json")+":1: at /: missing properties") {
		t.Errorf("bad data: %d %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "policy", "test", "a", "b"); code != exitUsage {
		t.Errorf("two dirs: %d", code)
	}
	if code, _, stderr := runCLI(t, "policy", "test", "nope"); code != exitUsage || !strings.Contains(stderr, "nope: cannot read the policy directory") {
		t.Errorf("missing dir: %d %q", code, stderr)
	}
}

func TestPolicyEval(t *testing.T) {
	allowed := writeFile(t, "in.json", `{"principal": "alice", "method": "tools/call", "target": "list_bookings", "ttl_seconds": 300, "max_rounds": 3, "inputs": {}}`)
	code, stdout, stderr := runCLI(t, "policy", "eval", "--input", allowed)
	var d struct {
		Allow     bool              `json:"allow"`
		Deny      []json.RawMessage `json:"deny"`
		MaxRounds int               `json:"max_rounds"`
		Rules     []string          `json:"rules"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != exitOK || !d.Allow || d.MaxRounds != 1 || d.Rules[0] != "tools.list_bookings" {
		t.Fatalf("allowed: %d %s %s %v", code, stdout, stderr, err)
	}
	denied := writeFile(t, "in2.json", `{"principal": "alice", "method": "tools/call", "target": "list_bookings", "ttl_seconds": 300, "max_rounds": 3,
 "inputs": {"c": {"method": "roots/list"}}}`)
	code, stdout, _ = runCLI(t, "policy", "eval", "--input", denied)
	if code != exitFindings || !strings.Contains(stdout, `"code": "policy.kind_not_allowed"`) {
		t.Fatalf("denied: %d %s", code, stdout)
	}
	// The resume decision, and another data file.
	code, stdout, _ = runCLI(t, "policy", "eval", "--decision", "resume", "--data", "policies/data/strict.json", "--input", allowed)
	if code != exitOK || !strings.Contains(stdout, `"ttl_seconds": 60`) {
		t.Fatalf("resume strict: %d %s", code, stdout)
	}
	notJSON := writeFile(t, "bad.json", "{\n\"target\": \n}")
	for name, args := range map[string][]string{
		"no input":     {"policy", "eval"},
		"not JSON":     {"policy", "eval", "--input", notJSON},
		"not object":   {"policy", "eval", "--input", writeFile(t, "arr.json", `[1]`)},
		"missing file": {"policy", "eval", "--input", "nope.json"},
		"bad decision": {"policy", "eval", "--decision", "maybe", "--input", allowed},
		"positional":   {"policy", "eval", allowed},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || stdout != "" || stderr == "" {
			t.Errorf("%s: %d %q %q", name, code, stdout, stderr)
		}
	}
	if _, _, stderr := runCLI(t, "policy", "eval", "--input", notJSON); !strings.Contains(stderr, notJSON+":3:") {
		t.Errorf("not JSON names no line: %q", stderr)
	}
}

func TestPolicyBuild(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bundle.tar.gz")
	code, stdout, stderr := runCLI(t, "policy", "build", "policies", "-o", out)
	if code != exitOK || !strings.Contains(stdout, "mrtr/ask/decision") {
		t.Fatalf("%d %q %q", code, stdout, stderr)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := bundle.NewReader(f).Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(b.WasmModules) != 1 || len(b.WasmModules[0].Raw) < 1000 || string(b.WasmModules[0].Raw[:4]) != "\x00asm" {
		t.Fatal("no policy.wasm in the bundle")
	}
	eps := map[string]bool{}
	for _, r := range b.Manifest.WasmResolvers {
		eps[r.Entrypoint] = true
	}
	if !eps["mrtr/ask/decision"] || !eps["mrtr/resume/decision"] {
		t.Errorf("entrypoints %v", b.Manifest.WasmResolvers)
	}
	cfg, _ := b.Data["mrtr"].(map[string]any)["config"].(map[string]any)
	if _, ok := cfg["tools"].(map[string]any)["book_demo_call"]; !ok {
		t.Errorf("the demo data is not in the bundle: %v", b.Data)
	}

	// A broken policy: exit 2, and no file written.
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	dir := policyDir(t, map[string]string{"data/demo.json": "{"})
	code, _, stderr = runCLI(t, "policy", "build", dir, "-o", bad)
	if code != exitUsage || !strings.Contains(stderr, "demo.json:1: not valid JSON") {
		t.Errorf("broken: %d %q", code, stderr)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Error("a broken policy left a bundle")
	}
	if code, _, stderr := runCLI(t, "policy", "build"); code != exitUsage || !strings.Contains(stderr, "-o FILE is required") {
		t.Errorf("no -o: %d %q", code, stderr)
	}
	if code, _, _ := runCLI(t, "policy", "build", "-o", filepath.Join(t.TempDir(), "no", "such", "dir.tar.gz")); code != exitUsage {
		t.Errorf("unwritable: %d", code)
	}
}
