package host

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
	"github.com/mrtr-wasm/mrtr-wasm/wasm"
)

var update = flag.Bool("update", false, "regenerate testdata/vectors from vectors_gen_test.go")

// runVectorFiles runs every vector file on the native core and on
// guard.wasm through wazero, one fresh instance per file, and requires
// the exact response bytes the file records.
func runVectorFiles(t *testing.T, dir string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vector files in %s", dir)
	}
	ctx := context.Background()
	eng, err := newWasmEngine(ctx, &config{module: wasm.Guard, wasiRand: defaultRand})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.close(ctx)
	total, wire := 0, 0
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f vecFile
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			native := core.New()
			inst, err := eng.newInstance(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer inst.close(ctx)
			for _, c := range f.Cases {
				in := c.bytes()
				// Every input_required result and every complete answer
				// recorded here must be valid MCP 2026-07-28 (schema_test.go).
				wire += checkVectorWire(t, c.Name, []byte(c.Response))
				got := native.Call(in)
				if !bytes.Equal(got, []byte(c.Response)) {
					t.Errorf("%s / native:\n got %s\nwant %s", c.Name, got, c.Response)
				}
				var resp map[string]any
				if err := json.Unmarshal(got, &resp); err != nil || !equalExpect(expectOf(resp), c.Expect) {
					t.Errorf("%s: outcome %+v, the file expects %+v", c.Name, expectOf(resp), c.Expect)
				}
				got, err := inst.call(ctx, in, 0)
				if err != nil {
					t.Fatalf("%s / wasm: %v", c.Name, err)
				}
				if !bytes.Equal(got, []byte(c.Response)) {
					t.Errorf("%s / wasm:\n got %s\nwant %s", c.Name, got, c.Response)
				}
				total++
			}
		})
	}
	t.Logf("%d vector cases in %d files, native and wasm; %d results and answers checked against the official schema", total, len(files), wire)
}
