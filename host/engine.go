package host

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
)

// Engine chooses how the guard core runs.
type Engine int

const (
	// EngineWasm runs guard.wasm through wazero's compiler: the very
	// module every other runtime runs. The default.
	EngineWasm Engine = iota
	// EngineNative runs the same core compiled into this binary: the
	// same code and answers, several times faster (BENCHMARKS.md), but not
	// the artefact the other runtimes run. Tests run every vector on both.
	EngineNative
)

func (e Engine) String() string {
	if e == EngineNative {
		return "native"
	}
	return "wasm"
}

// instance runs envelopes. call's result is valid until the next call;
// timeout (0 = none) and ctx's deadline bound it at the guest's
// checkpoints.
type instance interface {
	call(ctx context.Context, in []byte, timeout time.Duration) ([]byte, error)
	stats(ctx context.Context) ([]byte, error)
	// bloated reports an instance whose memory grew far past its limit.
	bloated() bool
	// collectDue reports that the instance would like collect run before
	// its next call (guest/ABI.md, guard_collect_due).
	collectDue(ctx context.Context) bool
	collect(ctx context.Context) error
	close(ctx context.Context)
}

type engine interface {
	newInstance(ctx context.Context) (instance, error)
	close(ctx context.Context) error
}

// --- native -----------------------------------------------------------------

type nativeEngine struct{}

func (nativeEngine) newInstance(context.Context) (instance, error) {
	n := &nativeInstance{g: core.New()}
	n.g.SetInterrupt(n.cc.stop)
	return n, nil
}
func (nativeEngine) close(context.Context) error { return nil }

type nativeInstance struct {
	g  *core.Guard
	cc guestCall
}

func (n *nativeInstance) call(ctx context.Context, in []byte, timeout time.Duration) ([]byte, error) {
	n.cc = guestCall{Context: ctx, deadline: deadlineOf(ctx, timeout)}
	defer func() { n.cc.Context = nil }()
	return n.g.Call(in), nil
}
func (n *nativeInstance) stats(context.Context) ([]byte, error) { return []byte(`{}`), nil }
func (n *nativeInstance) bloated() bool                         { return false }
func (n *nativeInstance) collectDue(context.Context) bool       { return false }
func (n *nativeInstance) collect(context.Context) error         { return nil }
func (n *nativeInstance) close(context.Context)                 {}

// --- wasm -------------------------------------------------------------------

// defaultMaxMiB bounds a runaway guest's linear memory.
const defaultMaxMiB = 256

type wasmEngine struct {
	rt          wazero.Runtime
	mod         wazero.CompiledModule
	cache       wazero.CompilationCache
	memoryLimit uint32 // MiB, 0 = the module's default
	rand        io.Reader
}

func newWasmEngine(ctx context.Context, cfg *config) (*wasmEngine, error) {
	maxMiB := cfg.maxMemoryMiB
	if maxMiB == 0 {
		maxMiB = defaultMaxMiB
	}
	// Linear memory comes from memoryAllocator (memory_unix.go), which
	// reserves the limit once so that growing never copies.
	rc := wazero.NewRuntimeConfigCompiler().
		WithCloseOnContextDone(false).
		WithMemoryLimitPages(maxMiB * 16)
	e := &wasmEngine{memoryLimit: cfg.memoryLimitMiB, rand: cfg.wasiRand}
	if cfg.cacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("mrtr: compilation cache %s: %w", cfg.cacheDir, err)
		}
		e.cache = c
		rc = rc.WithCompilationCache(c)
	} else {
		// Guards in one process share compiled code: compiling guard.wasm
		// takes seconds, instantiating it milliseconds.
		rc = rc.WithCompilationCache(processCache)
	}
	e.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		_ = e.rt.Close(ctx)
		return nil, err
	}
	_, err := e.rt.NewHostModuleBuilder("mrtr").
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(hostInterrupted), nil, []api.ValueType{api.ValueTypeI32}).
		Export("interrupted").
		Instantiate(ctx)
	if err != nil {
		_ = e.rt.Close(ctx)
		return nil, err
	}
	mod, err := e.rt.CompileModule(ctx, cfg.module)
	if err != nil {
		_ = e.rt.Close(ctx)
		return nil, fmt.Errorf("mrtr: compiling guard.wasm: %w", err)
	}
	for _, name := range []string{"guard_abi_version", "guard_alloc", "guard_call", "guard_stats", "guard_set_memory_limit"} {
		if _, ok := mod.ExportedFunctions()[name]; !ok {
			_ = e.rt.Close(ctx)
			return nil, fmt.Errorf("mrtr: guard.wasm does not export %s", name)
		}
	}
	e.mod = mod
	return e, nil
}

func (e *wasmEngine) newInstance(ctx context.Context) (instance, error) {
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous: many instances of one module
		WithStartFunctions("_initialize").
		// wazero's defaults are a fixed-seed random source and a frozen
		// clock: the guest gets the real ones.
		WithRandSource(e.rand).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		// A guest panic prints to stderr; it may hold request data, so it
		// goes nowhere.
		WithStderr(io.Discard).
		WithStdout(io.Discard)
	m, err := e.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, memoryAllocator), e.mod, mc)
	if err != nil {
		return nil, fmt.Errorf("mrtr: starting guard.wasm: %w", err)
	}
	in := &wasmInstance{
		m:     m,
		alloc: m.ExportedFunction("guard_alloc"),
		call_: m.ExportedFunction("guard_call"),
		stat:  m.ExportedFunction("guard_stats"),
		due:   m.ExportedFunction("guard_collect_due"),
		gc:    m.ExportedFunction("guard_collect"),
		mem:   m.Memory(),
	}
	if (in.due == nil) != (in.gc == nil) {
		in.due, in.gc = nil, nil
	}
	stack := in.stack[:]
	if err := m.ExportedFunction("guard_abi_version").CallWithStack(ctx, stack); err != nil {
		in.close(ctx)
		return nil, err
	}
	if uint32(stack[0]) != core.ABIVersion {
		in.close(ctx)
		return nil, fmt.Errorf("mrtr: guard.wasm speaks ABI %d, this host %d", uint32(stack[0]), core.ABIVersion)
	}
	// Set the heap limit (0 keeps the module's default) and read it back:
	// the guest's default is not repeated here.
	stack[0] = api.EncodeU32(e.memoryLimit)
	if err := m.ExportedFunction("guard_set_memory_limit").CallWithStack(ctx, stack); err != nil {
		in.close(ctx)
		return nil, err
	}
	in.maxBytes = uint32(min((2*uint64(api.DecodeU32(stack[0]))+16)<<20, math.MaxUint32))
	return in, nil
}

func (e *wasmEngine) close(ctx context.Context) error {
	err := e.rt.Close(ctx)
	if e.cache != nil {
		err = errors.Join(err, e.cache.Close(ctx))
	}
	return err
}

type wasmInstance struct {
	m     api.Module
	alloc api.Function
	call_ api.Function
	stat  api.Function
	// due and gc are guard_collect_due and guard_collect; nil in a module
	// built before them, which then collects only at its limit.
	due, gc api.Function
	mem     api.Memory
	stack   [2]uint64
	once    sync.Once
	cc      guestCall
	// maxBytes is the linear memory past which the instance is replaced.
	maxBytes uint32
}

func (w *wasmInstance) bloated() bool { return w.mem.Size() > w.maxBytes }

// guestCall is the context a guest call runs under. The host function
// "interrupted" finds it in its ctx and answers from the caller's context
// and the deadline. One per instance, reused: no allocation per call.
type guestCall struct {
	context.Context
	deadline int64 // UnixNano; 0 = none
}

func (c *guestCall) stop() bool {
	if c.Context.Err() != nil {
		return true
	}
	return c.deadline != 0 && time.Now().UnixNano() > c.deadline
}

func hostInterrupted(ctx context.Context, stack []uint64) {
	stack[0] = 0
	if c, ok := ctx.(*guestCall); ok && c.stop() {
		stack[0] = 1
	}
}

func deadlineOf(ctx context.Context, timeout time.Duration) int64 {
	var d int64
	if timeout > 0 {
		d = time.Now().Add(timeout).UnixNano()
	}
	if t, ok := ctx.Deadline(); ok && (d == 0 || t.UnixNano() < d) {
		d = t.UnixNano()
	}
	return d
}

func (w *wasmInstance) call(ctx context.Context, in []byte, timeout time.Duration) ([]byte, error) {
	w.cc = guestCall{Context: ctx, deadline: deadlineOf(ctx, timeout)}
	ctx = &w.cc
	defer func() { w.cc.Context = nil }()
	stack := w.stack[:]
	stack[0] = api.EncodeU32(uint32(len(in)))
	if err := w.alloc.CallWithStack(ctx, stack); err != nil {
		return nil, err
	}
	ptr := api.DecodeU32(stack[0])
	if !w.mem.Write(ptr, in) {
		return nil, errors.New("mrtr: guest buffer out of range")
	}
	stack[0] = api.EncodeU32(uint32(len(in)))
	if err := w.call_.CallWithStack(ctx, stack); err != nil {
		return nil, err
	}
	return w.read(stack[0])
}

func (w *wasmInstance) read(ptrLen uint64) ([]byte, error) {
	out, ok := w.mem.Read(uint32(ptrLen>>32), uint32(ptrLen))
	if !ok {
		return nil, errors.New("mrtr: guest response out of range")
	}
	return out, nil
}

func (w *wasmInstance) collectDue(ctx context.Context) bool {
	if w.due == nil {
		return false
	}
	stack := w.stack[:]
	return w.due.CallWithStack(ctx, stack) == nil && api.DecodeU32(stack[0]) == 1
}

func (w *wasmInstance) collect(ctx context.Context) error {
	if w.gc == nil {
		return nil
	}
	return w.gc.CallWithStack(ctx, w.stack[:])
}

func (w *wasmInstance) stats(ctx context.Context) ([]byte, error) {
	stack := w.stack[:]
	if err := w.stat.CallWithStack(ctx, stack); err != nil {
		return nil, err
	}
	out, err := w.read(stack[0])
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), out...), nil
}

func (w *wasmInstance) close(ctx context.Context) {
	w.once.Do(func() { _ = w.m.Close(context.WithoutCancel(ctx)) })
}

var (
	defaultRand  io.Reader = rand.Reader
	processCache           = wazero.NewCompilationCache()
)
