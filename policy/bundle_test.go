package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/tetratelabs/wazero"
)

// TestWasmImportsOnlySprintf asks the compiled policy.wasm itself (its
// builtins() export, through wazero) which builtins it needs from its
// host: only sprintf, which @open-policy-agent/opa-wasm provides. Every
// other builtin runs inside the module, the same in Go and in Node.
func TestWasmImportsOnlySprintf(t *testing.T) {
	ctx := context.Background()
	for _, data := range []string{"demo", "strict"} {
		e, err := Default(ctx, WithData(data))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := e.WriteBundle(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.NewReader(&buf).Read()
		if err != nil {
			t.Fatal(err)
		}
		got := wasmBuiltins(t, b.WasmModules[0].Raw)
		t.Logf("%s: %v", data, got)
		for name := range got {
			if !hostBuiltins[name] {
				t.Errorf("%s: policy.wasm needs %s from its host", data, name)
			}
		}
		if _, ok := got["sprintf"]; !ok {
			t.Errorf("%s: builtins() = %v: the check reads nothing", data, got)
		}
	}
}

func wasmBuiltins(t *testing.T, module []byte) map[string]int {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	// The policy imports its memory and host functions from "env"; a host
	// module cannot export memory, so "env" is a tiny Wasm module that
	// owns the memory and re-exports the functions of the host module "h".
	h := rt.NewHostModuleBuilder("h")
	h.NewFunctionBuilder().WithFunc(func(context.Context, uint32) { panic("opa_abort") }).Export("opa_abort")
	for i, f := range []any{
		func(context.Context, uint32, uint32) uint32 { panic("builtin called") },
		func(context.Context, uint32, uint32, uint32) uint32 { panic("builtin called") },
		func(context.Context, uint32, uint32, uint32, uint32) uint32 { panic("builtin called") },
		func(context.Context, uint32, uint32, uint32, uint32, uint32) uint32 { panic("builtin called") },
		func(context.Context, uint32, uint32, uint32, uint32, uint32, uint32) uint32 { panic("builtin called") },
	} {
		h.NewFunctionBuilder().WithFunc(f).Export(fmt.Sprintf("opa_builtin%d", i))
	}
	if _, err := h.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	env, err := rt.InstantiateWithConfig(ctx, envModule(), wazero.NewModuleConfig().WithName("env"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := rt.InstantiateWithConfig(ctx, module, wazero.NewModuleConfig().WithName("policy"))
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, args ...uint64) uint64 {
		t.Helper()
		r, err := m.ExportedFunction(name).Call(ctx, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r[0]
	}
	p := uint32(call("opa_json_dump", call("builtins")))
	mem := env.Memory()
	var s []byte
	for i := p; ; i++ {
		c, ok := mem.ReadByte(i)
		if !ok || c == 0 {
			break
		}
		s = append(s, c)
	}
	var out map[string]int
	if err := json.Unmarshal(s, &out); err != nil {
		t.Fatalf("builtins() = %q: %v", s, err)
	}
	return out
}

// envModule encodes the glue module: memory plus opa_abort and
// opa_builtin0..4 imported from "h" and exported again.
func envModule() []byte {
	const i32 = 0x7f
	vec := func(items ...[]byte) []byte {
		out := []byte{byte(len(items))}
		for _, it := range items {
			out = append(out, it...)
		}
		return out
	}
	name := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	section := func(id byte, body []byte) []byte { return append([]byte{id, byte(len(body))}, body...) }
	var types, imports, exports [][]byte
	types = append(types, []byte{0x60, 1, i32, 0}) // (i32) -> ()
	imports = append(imports, append(append(name("h"), name("opa_abort")...), 0x00, 0))
	exports = append(exports, append(name("memory"), 0x02, 0), append(name("opa_abort"), 0x00, 0))
	for arity := 0; arity <= 4; arity++ {
		ft := []byte{0x60, byte(2 + arity)}
		for i := 0; i < 2+arity; i++ {
			ft = append(ft, i32)
		}
		types = append(types, append(ft, 1, i32))
		fn := fmt.Sprintf("opa_builtin%d", arity)
		imports = append(imports, append(append(name("h"), name(fn)...), 0x00, byte(1+arity)))
		exports = append(exports, append(name(fn), 0x00, byte(1+arity)))
	}
	mod := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	mod = append(mod, section(1, vec(types...))...)
	mod = append(mod, section(2, vec(imports...))...)
	mod = append(mod, section(5, vec([]byte{0x00, 4}))...) // memory, min 4 pages
	mod = append(mod, section(7, vec(exports...))...)
	return mod
}
