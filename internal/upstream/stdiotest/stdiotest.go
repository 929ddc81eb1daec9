// Package stdiotest is a small, deliberately hostile MCP server on
// stdin/stdout for the tests of the stdio upstream: its mode and tools
// make the hostile cases real (a process that dies, hangs, writes
// garbage, floods stderr or asks the client things). Test binaries run it
// by re-executing themselves (see Main); hostile/ is the same as a
// program.
package stdiotest

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Env names the variable that holds the mode; a process started with it
// set is the child.
const Env = "MRTR_TEST_CHILD"

// Main runs the child and exits when this process was started as one
// (Env set); otherwise it returns at once. Call it first in TestMain.
func Main() {
	if mode, ok := os.LookupEnv(Env); ok {
		Run(mode)
		os.Exit(0)
	}
}

type childServer struct {
	mode      string
	wmu       sync.Mutex
	mu        sync.Mutex
	cancelled []json.RawMessage
	replies   map[string]chan json.RawMessage
	initCaps  json.RawMessage // what the client declared at initialize
	rootsDone chan json.RawMessage
}

func (c *childServer) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	c.raw(append(b, '\n'))
}

func (c *childServer) raw(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = os.Stdout.Write(b)
}

type rpc struct {
	JSONRPC string          `json:"jsonrpc,omitempty"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// Run serves until stdin ends. Modes: ok, legacy (answers initialize,
// not server/discover), nodiscover (never answers), slowstart (600 ms
// before reading), banner (prints a line to stdout first), ignoreterm
// (ignores SIGTERM and stdin's end), crashafter (every start after the
// first, counted in MRTR_TEST_COUNTER's file, dies at once), sleeper.
func Run(mode string) {
	if mode == "crashafter" {
		// Counts its starts in a file: the first start works, every later
		// one dies at once (a crash loop).
		f := os.Getenv("MRTR_TEST_COUNTER")
		b, _ := os.ReadFile(f)
		n, _ := strconv.Atoi(string(b))
		_ = os.WriteFile(f, []byte(strconv.Itoa(n+1)), 0o600)
		if n > 0 {
			fmt.Fprintln(os.Stderr, "crashafter: refusing to start again")
			os.Exit(1)
		}
	}
	if mode == "sleeper" {
		time.Sleep(5 * time.Minute)
		return
	}
	if mode == "slowstart" {
		time.Sleep(600 * time.Millisecond)
	}
	if mode == "ignoreterm" {
		signal.Ignore(syscall.SIGTERM)
	}
	if mode == "banner" {
		fmt.Println("Starting my server v1.0 ...")
	}
	c := &childServer{mode: mode, replies: map[string]chan json.RawMessage{}, rootsDone: make(chan json.RawMessage, 1)}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var m rpc
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			fmt.Fprintln(os.Stderr, "child: bad input:", err)
			continue
		}
		if m.Method == "" {
			c.mu.Lock()
			ch := c.replies[string(m.ID)]
			c.mu.Unlock()
			if ch != nil {
				ch <- sc.Bytes()
			}
			continue
		}
		if len(m.ID) == 0 {
			if m.Method == "notifications/initialized" {
				c.askRootsAtStart()
			}
			if m.Method == "notifications/cancelled" {
				var p struct {
					RequestID json.RawMessage `json:"requestId"`
				}
				_ = json.Unmarshal(m.Params, &p)
				c.mu.Lock()
				c.cancelled = append(c.cancelled, p.RequestID)
				c.mu.Unlock()
			}
			continue
		}
		go c.handle(m, slices.Clone(sc.Bytes()))
	}
	if mode == "ignoreterm" {
		time.Sleep(time.Hour)
	}
}

func (c *childServer) result(id json.RawMessage, v any) {
	b, _ := json.Marshal(v)
	c.send(rpc{JSONRPC: "2.0", ID: id, Result: b})
}

func (c *childServer) handle(m rpc, line []byte) {
	switch m.Method {
	case "server/discover":
		if c.mode == "legacy" {
			c.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
			return
		}
		if c.mode == "nodiscover" {
			return
		}
		c.result(m.ID, map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "child", "version": "1"}})
	case "initialize":
		var p struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		_ = json.Unmarshal(m.Params, &p)
		c.mu.Lock()
		c.initCaps = p.Capabilities
		c.mu.Unlock()
		c.result(m.ID, map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "legacy-child", "version": "1"}})
	case "tools/list":
		c.result(m.ID, map[string]any{"tools": []any{}})
	case "subscriptions/listen":
		// A stream that outlives a short call timeout: one notification,
		// a pause, another, then the end.
		for i, pause := range []time.Duration{0, 600 * time.Millisecond} {
			time.Sleep(pause)
			c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
				"params": map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": m.ID, "n": i + 1}}})
		}
		c.result(m.ID, map[string]any{})
	case "tools/call":
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
			Meta      map[string]any `json:"_meta"`
		}
		_ = json.Unmarshal(m.Params, &p)
		c.tool(m, p.Name, p.Arguments, p.Meta)
	default:
		c.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
	}
}

// askRootsAtStart does what server-everything and server-filesystem do:
// a client that declared roots is asked for them right after initialized,
// outside any call. The reply is kept for the roots-at-start tool.
func (c *childServer) askRootsAtStart() {
	c.mu.Lock()
	var caps map[string]json.RawMessage
	_ = json.Unmarshal(c.initCaps, &caps)
	c.mu.Unlock()
	if _, ok := caps["roots"]; !ok {
		close(c.rootsDone)
		return
	}
	go func() {
		reply := c.request("srv-roots-at-start", "roots/list", nil)
		if reply == nil {
			reply = json.RawMessage(`"no reply"`)
		}
		c.rootsDone <- reply
	}()
}

// request sends the client a request and waits up to 5 s for its reply
// (nil: none came). Not from the read loop, which delivers the reply.
func (c *childServer) request(id, method string, params any) json.RawMessage {
	rid := json.RawMessage(strconv.Quote(id))
	ch := make(chan json.RawMessage, 1)
	c.mu.Lock()
	c.replies[string(rid)] = ch
	c.mu.Unlock()
	msg := map[string]any{"jsonrpc": "2.0", "id": rid, "method": method}
	if params != nil {
		msg["params"] = params
	}
	c.send(msg)
	select {
	case reply := <-ch:
		return reply
	case <-time.After(5 * time.Second):
		return nil
	}
}

func (c *childServer) tool(m rpc, name string, args, meta map[string]any) {
	text := func(s string) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	said := func(reply json.RawMessage) map[string]any {
		if reply == nil {
			return text("no reply")
		}
		return text("the client said: " + string(reply))
	}
	switch name {
	case "echo":
		r := text("echo")
		r["structuredContent"] = map[string]any{"id": m.ID, "meta": meta, "arguments": args}
		c.result(m.ID, r)
	case "progress":
		for i := range 3 {
			c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": meta["progressToken"], "progress": i + 1, "total": 3}})
		}
		c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "done"}})
		c.result(m.ID, text("progressed"))
	case "flood":
		// count progress notifications of about size bytes each, then the result.
		n, _ := args["count"].(float64)
		size, _ := args["size"].(float64)
		pad := strings.Repeat("x", int(size))
		for i := range int(n) {
			c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": meta["progressToken"], "progress": i + 1, "message": pad}})
		}
		c.result(m.ID, text("flooded"))
	case "sleep":
		ms, _ := args["ms"].(float64)
		time.Sleep(time.Duration(ms) * time.Millisecond)
		c.result(m.ID, text("slept"))
	case "die":
		fmt.Fprintln(os.Stderr, "child: dying mid-call")
		os.Exit(3)
	case "password":
		c.result(m.ID, map[string]any{"resultType": "input_required", "requestState": "child-state",
			"inputRequests": map[string]any{"login": map[string]any{"method": "elicitation/create", "params": map[string]any{
				"mode": "form", "message": "Sign in", "requestedSchema": map[string]any{"type": "object",
					"properties": map[string]any{"password": map[string]any{"type": "string"}}}}}}})
	case "garbage":
		c.raw([]byte("this is not json\n"))
		c.raw([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[` + "\n"))
	case "garbage-only":
		c.raw([]byte("<html>oops</html>\n"))
	case "big":
		n, _ := args["bytes"].(float64)
		c.result(m.ID, text(strings.Repeat("x", int(n))))
	case "ask-roots":
		// roots/list in the middle of the call, whatever was declared (a
		// server that does not check its client's capabilities).
		c.result(m.ID, said(c.request("srv-roots", "roots/list", nil)))
	case "ask":
		c.result(m.ID, said(c.request("srv-1", "elicitation/create", map[string]any{"message": "Your password?",
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"password": map[string]any{"type": "string"}}}})))
	case "env":
		r := text("env")
		r["structuredContent"] = map[string]any{"env": os.Environ()}
		c.result(m.ID, r)
	case "stderr":
		n, _ := args["lines"].(float64)
		for i := range int(n) {
			fmt.Fprintf(os.Stderr, "line %d of the child's log\n", i)
		}
		// raw: bytes (base64) written as they are, control characters
		// and all.
		if raw, ok := args["raw"].(string); ok {
			b, _ := base64.StdEncoding.DecodeString(raw)
			os.Stderr.Write(b)
		}
		c.result(m.ID, text("logged"))
	case "spawn":
		exe, _ := os.Executable()
		cmd := exec.Command(exe)
		cmd.Env = []string{Env + "=sleeper"}
		if err := cmd.Start(); err != nil {
			c.result(m.ID, text("spawn: "+err.Error()))
			return
		}
		r := text("spawned")
		r["structuredContent"] = map[string]any{"pid": cmd.Process.Pid}
		c.result(m.ID, r)
	case "cancelled":
		c.mu.Lock()
		r := text("cancelled")
		r["structuredContent"] = map[string]any{"ids": c.cancelled}
		c.mu.Unlock()
		c.result(m.ID, r)
	case "roots-at-start":
		// What the client declared, and how its roots/list right after
		// initialized was answered ("none": roots were not declared).
		reply, ok := <-c.rootsDone
		if !ok {
			reply = json.RawMessage(`"none"`)
		}
		c.mu.Lock()
		r := text("roots-at-start")
		r["structuredContent"] = map[string]any{"capabilities": c.initCaps, "reply": reply}
		c.mu.Unlock()
		c.result(m.ID, r)
	case "snoop":
		// What a child can read of its parent's secrets: the parent's
		// environment, and the files named in paths.
		paths, _ := args["paths"].([]any)
		files := []string{fmt.Sprintf("/proc/%d/environ", os.Getppid())}
		for _, p := range paths {
			s, _ := p.(string)
			files = append(files, s)
		}
		read := map[string]string{}
		for _, f := range files {
			if b, err := os.ReadFile(f); err != nil {
				read[f] = "error: " + err.Error()
			} else {
				read[f] = "read: " + string(b)
			}
		}
		r := text("snoop")
		groups, _ := os.Getgroups()
		r["structuredContent"] = map[string]any{"read": read, "uid": os.Getuid(), "gid": os.Getgid(), "groups": groups}
		c.result(m.ID, r)
	case "pid":
		r := text("pid")
		r["structuredContent"] = map[string]any{"pid": os.Getpid()}
		c.result(m.ID, r)
	default:
		c.result(m.ID, map[string]any{"isError": true, "content": []any{map[string]any{"type": "text", "text": "no tool " + name}}})
	}
}
