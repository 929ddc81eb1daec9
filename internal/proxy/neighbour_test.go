package proxy_test

// The hostile-neighbour run and the soak (issue 30): two real proxy
// processes (the mrtr-wasm binary), one in front of a 2025-11-25
// Streamable HTTP upstream and one in front of a 2025-11-25 stdio child,
// both the booker program (internal/upstream/stdiotest/booker), which
// records every accepted booking's effect as a line in a file. The
// principal "alice" books (a tools/call the upstream answers with
// elicitation/create, then the retry with her answer) while "mallory"
// floods both proxies with waiting rounds she never answers, legacy
// sessions, tools/call with random 20 KB names, request bodies trickled a
// byte at a time and responses she reads a few hundred bytes at a time.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
)

const (
	nbHonestToken  = "honest-token-0123456789abcdef"
	nbHostileToken = "hostile-token-0123456789abcdef"
)

// nbProxy is one proxy process and the upstream behind it.
type nbProxy struct {
	name    string // "http" or "stdio"
	base    string // http://ADDR
	pid     int
	effects string // the upstream's effects file
	honest  int    // alice's bookings in flight at once
	caps    string // the pools' flags it was started with
}

// nbEnv is the run's two proxies.
type nbEnv struct {
	proxies []*nbProxy
}

// nbCaps are the pools' flags given to both proxies when the binary has
// them (`proxy -h` names them), so that the figures are measured against
// stated caps.
var nbCaps = []string{"--max-pending=1024", "--max-pending-principal=16", "--max-sessions=1000", "--max-children=16", "--upstream-max-queued=67108864", "--child-round-hold=1m"}

func startNeighbour(tb testing.TB) *nbEnv {
	tb.Helper()
	dir := tb.TempDir()
	root, _ := filepath.Abs("../..")
	bin := filepath.Join(dir, "mrtr-wasm")
	builds := [][]string{{"go", "build", "-o", filepath.Join(dir, "booker"), "./internal/upstream/stdiotest/booker"}}
	if b := os.Getenv("MRTR_NEIGHBOUR_BIN"); b != "" {
		bin = b // another build of mrtr-wasm, to compare
	} else {
		builds = append(builds, []string{"go", "build", "-o", bin, "./cmd/mrtr-wasm"})
	}
	for _, c := range builds {
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir, cmd.Stderr = root, os.Stderr
		if err := cmd.Run(); err != nil {
			tb.Fatal(err)
		}
	}
	keys, err := exec.Command(bin, "keygen").Output()
	if err != nil {
		tb.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	keysFile := write("keys", keys)
	tokens, _ := json.Marshal(map[string]string{nbHonestToken: "alice", nbHostileToken: "mallory"})
	tokensFile := write("tokens.json", tokens)
	help, _ := exec.Command(bin, "proxy", "-h").CombinedOutput()
	var caps []string
	for _, c := range nbCaps {
		name, _, _ := strings.Cut(strings.TrimPrefix(c, "--"), "=")
		if bytes.Contains(help, []byte("-"+name+" ")) || bytes.Contains(help, []byte("-"+name+"\n")) {
			caps = append(caps, c)
		}
	}
	spawn := func(name string, args ...string) (*exec.Cmd, io.Reader, io.Reader) {
		cmd := exec.Command(name, args...)
		out, _ := cmd.StdoutPipe()
		errs, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); waitOrKill(cmd) })
		return cmd, out, errs
	}
	// The HTTP upstream prints its address.
	httpEffects := filepath.Join(dir, "http-effects")
	_, upOut, upErr := spawn(filepath.Join(dir, "booker"), "-http", "127.0.0.1:0", "-effects", httpEffects)
	go io.Copy(os.Stderr, upErr)
	upAddr, err := bufio.NewReader(upOut).ReadString('\n')
	if err != nil {
		tb.Fatalf("the HTTP upstream did not start: %v", err)
	}
	common := append([]string{"proxy", "--addr", "127.0.0.1:0", "--keys", keysFile, "--auth-tokens", tokensFile,
		"--log-format", "json", "--wasm-cache", filepath.Join(os.TempDir(), "mrtr-wasm-proxy-test-cache")}, caps...)
	startProxy := func(name, effects string, honest int, upstreamArgs ...string) *nbProxy {
		cmd, _, logs := spawn(bin, append(slices.Clone(common), upstreamArgs...)...)
		base := make(chan string, 1)
		go func() {
			// The start line names the address; the rest is drained.
			re := regexp.MustCompile(`"mcp":"http://([0-9.:]+)/mcp"`)
			// MRTR_NEIGHBOUR_LOGS=DIR keeps each proxy's log there.
			if d := os.Getenv("MRTR_NEIGHBOUR_LOGS"); d != "" {
				if f, err := os.Create(filepath.Join(d, name+"-proxy.log")); err == nil {
					defer f.Close()
					logs = io.TeeReader(logs, f)
				}
			}
			sc := bufio.NewScanner(logs)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			found := false
			for sc.Scan() {
				if m := re.FindStringSubmatch(sc.Text()); m != nil && !found {
					found = true
					base <- "http://" + m[1]
				}
			}
			if !found {
				base <- ""
			}
		}()
		var b string
		select {
		case b = <-base:
		case <-time.After(60 * time.Second):
		}
		if b == "" {
			tb.Fatalf("the %s proxy did not start", name)
		}
		return &nbProxy{name: name, base: b, pid: cmd.Process.Pid, effects: effects, honest: honest, caps: strings.Join(caps, " ")}
	}
	e := &nbEnv{}
	e.proxies = append(e.proxies, startProxy("http", httpEffects, 2, "--upstream", "http://"+strings.TrimSpace(upAddr)+"/mcp"))
	// A 2025-era stdio child cannot take an elicitation while two of one
	// principal's calls are open, so alice books one at a time there.
	stdioEffects := filepath.Join(dir, "stdio-effects")
	e.proxies = append(e.proxies, startProxy("stdio", stdioEffects, 1, "--", filepath.Join(dir, "booker"), "-effects", stdioEffects))
	return e
}

func waitOrKill(cmd *exec.Cmd) {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// nbRequest is a 2026-07-28 tools/call by token; extra is spliced into
// params.
func nbRequest(ctx context.Context, base, token string, id int64, name, args, extra string) *http.Request {
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"tools/call","params":{"name":` + strconv.Quote(name) + `,"arguments":` + args +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}` + extra + `}}`
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/mcp", strings.NewReader(body))
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", name)
	h.Set("Authorization", "Bearer "+token)
	return req
}

var nbID atomic.Int64

// nbResult is the part of a tools/call answer a booking reads.
type nbResult struct {
	ResultType    string                     `json:"resultType"`
	RequestState  string                     `json:"requestState"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Content       []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// nbCall sends one tools/call and decodes its result (the last message of
// an event stream).
func nbCall(c *http.Client, req *http.Request) (*nbResult, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				last = d
			}
		}
		b = last
	}
	var m struct {
		Result *nbResult       `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Result == nil {
		return nil, fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, b)
	}
	return m.Result, nil
}

// book runs one of alice's bookings: the call, the upstream's question,
// her answer, the upstream's "booked ID".
func book(ctx context.Context, c *http.Client, base, id string) error {
	args := `{"id":` + strconv.Quote(id) + `}`
	r, err := nbCall(c, nbRequest(ctx, base, nbHonestToken, nbID.Add(1), "book", args, ""))
	if err != nil {
		return err
	}
	if r.ResultType != "input_required" || r.RequestState == "" || len(r.InputRequests) != 1 {
		return fmt.Errorf("%s: want one input request, got %q %d", id, r.ResultType, len(r.InputRequests))
	}
	var key string
	for k := range r.InputRequests {
		key = k
	}
	answer, _ := json.Marshal(map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Alice " + id}}})
	state, _ := json.Marshal(r.RequestState)
	r, err = nbCall(c, nbRequest(ctx, base, nbHonestToken, nbID.Add(1), "book", args, `,"requestState":`+string(state)+`,"inputResponses":`+string(answer)))
	if err != nil {
		return err
	}
	if len(r.Content) != 1 || r.Content[0].Text != "booked "+id {
		return fmt.Errorf("%s: not booked: %q %+v", id, r.ResultType, r.Content)
	}
	return nil
}

// honestRun is what alice did against one proxy.
type honestRun struct {
	lat    []time.Duration // per complete booking (both requests)
	done   []string        // ids she saw booked
	failed int
	errs   []string // the first few failures
}

// honest books on every proxy until ctx ends (or, with n > 0, n bookings
// per worker), ids prefixed with prefix.
func (e *nbEnv) honest(ctx context.Context, prefix string, n int) map[string]*honestRun {
	out := map[string]*honestRun{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range e.proxies {
		run := &honestRun{}
		out[p.name] = run
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 60 * time.Second}
		for w := range p.honest {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; (n == 0 || i < n) && ctx.Err() == nil; i++ {
					id := fmt.Sprintf("%s-%s-%d-%d", prefix, p.name, w, i)
					t := time.Now()
					err := book(context.WithoutCancel(ctx), c, p.base, id) // a started booking finishes
					d := time.Since(t)
					mu.Lock()
					if err != nil {
						run.failed++
						if len(run.errs) < 5 {
							run.errs = append(run.errs, err.Error())
						}
					} else {
						run.lat = append(run.lat, d)
						run.done = append(run.done, id)
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	return out
}

// hostileCounts are mallory's requests by kind and how they ended.
type hostileCounts struct {
	mu       sync.Mutex
	m        map[string]int    // "kind/outcome"
	examples map[string]string // the first answer of each "kind/error"
}

func newHostileCounts() *hostileCounts {
	return &hostileCounts{m: map[string]int{}, examples: map[string]string{}}
}

func (h *hostileCounts) add(kind, outcome string) { h.example(kind, outcome, "") }

// example counts one outcome and keeps the first answer of each kind
// that ended in an error.
func (h *hostileCounts) example(kind, outcome, body string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := kind + "/" + outcome
	h.m[k]++
	if _, ok := h.examples[k]; !ok && body != "" && outcome != "round" && outcome != "session" {
		h.examples[k] = body
	}
}

// total is the number of requests counted.
func (h *hostileCounts) total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, v := range h.m {
		n += v
	}
	return n
}

func (h *hostileCounts) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.m))
	for k := range h.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, h.m[k])
	}
	for _, k := range keys {
		if e, ok := h.examples[k]; ok {
			fmt.Fprintf(&b, "\n  first %s: %.200s", k, e)
		}
	}
	return b.String()
}

// nbFlood sizes mallory's flood, per proxy.
type nbFlood struct {
	rounds, sessions, names int           // workers calling in a loop
	pause                   time.Duration // between one worker's calls
	slowBodies, slowReaders int           // connections kept open
	bigBytes                int           // the result a slow reader asks for
}

var defaultFlood = nbFlood{rounds: 4, sessions: 2, names: 2, pause: 5 * time.Millisecond, slowBodies: 32, slowReaders: 16, bigBytes: 1 << 20}

// flood is defaultFlood with MRTR_NEIGHBOUR_PAUSE's pause and
// MRTR_NEIGHBOUR_FLOOD's sizes ("rounds=4,sessions=2,names=2,
// slow_bodies=32,slow_readers=16,big=1048576"), where set.
func flood(tb testing.TB) nbFlood {
	f := defaultFlood
	f.pause = envDuration(tb, "MRTR_NEIGHBOUR_PAUSE", f.pause)
	sizes := map[string]*int{"rounds": &f.rounds, "sessions": &f.sessions, "names": &f.names,
		"slow_bodies": &f.slowBodies, "slow_readers": &f.slowReaders, "big": &f.bigBytes}
	if v := os.Getenv("MRTR_NEIGHBOUR_FLOOD"); v != "" {
		for _, kv := range strings.Split(v, ",") {
			k, n, _ := strings.Cut(kv, "=")
			i, err := strconv.Atoi(n)
			if sizes[k] == nil || err != nil || i < 0 {
				tb.Fatalf("MRTR_NEIGHBOUR_FLOOD: %q is not one of rounds, sessions, names, slow_bodies, slow_readers, big = a count", kv)
			}
			*sizes[k] = i
		}
	}
	return f
}

// cpuMeter reads the CPU time of the proxies and of this process (the
// clients, honest and hostile).
type cpuMeter struct {
	t     time.Time
	procs []time.Duration
	self  time.Duration
}

func (e *nbEnv) cpu() cpuMeter {
	m := cpuMeter{t: time.Now(), self: selfCPUTime()}
	for _, p := range e.proxies {
		m.procs = append(m.procs, testenv.CPU(p.pid))
	}
	return m
}

// since says how many cores each proxy and this process kept busy.
func (e *nbEnv) cpuSince(m cpuMeter) string {
	now := e.cpu()
	wall := now.t.Sub(m.t).Seconds()
	var b strings.Builder
	for i, p := range e.proxies {
		fmt.Fprintf(&b, "%s proxy %.2f cores, ", p.name, (now.procs[i]-m.procs[i]).Seconds()/wall)
	}
	fmt.Fprintf(&b, "clients %.2f cores", (now.self-m.self).Seconds()/wall)
	return b.String()
}

func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// outcome names how a hostile request ended, from its HTTP status and
// body (no tokens or ids in it).
func outcome(status int, body []byte) string {
	switch {
	case status == http.StatusServiceUnavailable || bytes.Contains(body, []byte(`"code":-32000`)):
		return "refused"
	case bytes.Contains(body, []byte(`"input_required"`)):
		return "round"
	case status == http.StatusOK && bytes.Contains(body, []byte(`"protocolVersion"`)):
		return "session"
	case bytes.Contains(body, []byte(`"error"`)):
		return "error"
	}
	return "http" + strconv.Itoa(status)
}

// hostile floods every proxy as mallory until ctx ends.
func (e *nbEnv) hostile(ctx context.Context, f nbFlood, counts *hostileCounts) {
	var wg sync.WaitGroup
	loop := func(n int, f func(c *http.Client)) {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 30 * time.Second}
				defer c.CloseIdleConnections()
				for ctx.Err() == nil {
					f(c)
				}
			}()
		}
	}
	// The slow connections first: each of mallory's calls counts against
	// her cap on open calls until its result is in, so once her rounds
	// fill it a slow reader would only be refused.
	for _, p := range e.proxies {
		slow := func(kind string, n int, f func() (string, string)) {
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						outcome, got := f()
						counts.example(p.name+"/"+kind, outcome, got)
					}
				}()
			}
		}
		host := strings.TrimPrefix(p.base, "http://")
		slow("slow_body", f.slowBodies, func() (string, string) { return slowBody(ctx, host), "" })
		slow("slow_reader", f.slowReaders, func() (string, string) { return slowReader(ctx, host, f.bigBytes) })
	}
	sleep(ctx, time.Second)
	for _, p := range e.proxies {
		do := func(c *http.Client, kind string, req *http.Request) {
			kind = p.name + "/" + kind
			resp, err := c.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					counts.add(kind, "failed")
				}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			counts.example(kind, outcome(resp.StatusCode, b), string(b))
			sleep(ctx, f.pause)
		}
		// Waiting rounds: the upstream asks, mallory never answers.
		loop(f.rounds, func(c *http.Client) {
			do(c, "rounds", nbRequest(ctx, p.base, nbHostileToken, nbID.Add(1), "book", `{"id":"mallory-`+strconv.FormatInt(nbID.Add(1), 10)+`"}`, ""))
		})
		// Legacy sessions: initialize, never used again, never closed.
		loop(f.sessions, func(c *http.Client) {
			req, _ := http.NewRequestWithContext(ctx, "POST", p.base+"/mcp", strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mallory","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+nbHostileToken)
			do(c, "sessions", req)
		})
		// Random 20 KB tool names, each one new.
		loop(f.names, func(c *http.Client) {
			do(c, "names", nbRequest(ctx, p.base, nbHostileToken, nbID.Add(1), randomName(20<<10), `{}`, ""))
		})
	}
	wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func randomName(n int) string {
	b := make([]byte, n/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// rawRequest is a POST /mcp's head for a raw connection.
func rawRequest(host, name string, length int) string {
	return "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: " + name + "\r\nAuthorization: Bearer " + nbHostileToken +
		"\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(length) + "\r\n\r\n"
}

// slowBody sends a request's head, then its body a byte every 500 ms,
// until the proxy gives up on it (or ctx ends).
func slowBody(ctx context.Context, host string) string {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book","arguments":{"id":"mallory-slow"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	conn, err := net.Dial("tcp", host)
	if err != nil {
		sleep(ctx, 100*time.Millisecond)
		return "dial_failed"
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if _, err := io.WriteString(conn, rawRequest(host, "book", len(body))); err != nil {
		return "cut"
	}
	start := time.Now()
	for i := 0; i < len(body); i++ {
		if _, err := conn.Write([]byte{body[i]}); err != nil {
			return "cut"
		}
		sleep(ctx, 500*time.Millisecond)
		if ctx.Err() != nil {
			return "stopped"
		}
		// The proxy answers 408 or closes when its read timeout is up;
		// a short read deadline sees either without blocking the trickle.
		conn.SetReadDeadline(time.Now().Add(time.Millisecond))
		var one [1]byte
		if n, err := conn.Read(one[:]); n > 0 || (err != nil && !isTimeout(err)) {
			return "cut_after_" + bucket(time.Since(start))
		}
	}
	return "completed"
}

// bucket rounds how long the proxy held a slow body to 10 s steps.
func bucket(d time.Duration) string {
	return strconv.Itoa(int(d/(10*time.Second))*10) + "s"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// slowReader asks for a big result and reads it 512 bytes every 200 ms
// through a small receive buffer, until the proxy gives up (or ctx ends).
// It returns how that ended and the answer's first bytes.
func slowReader(ctx context.Context, host string, size int) (string, string) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		sleep(ctx, 100*time.Millisecond)
		return "dial_failed", ""
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"bytes":` + strconv.Itoa(size) +
		`},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	if _, err := io.WriteString(conn, rawRequest(host, "big", len(body))+body); err != nil {
		return "cut", ""
	}
	got := 0
	var head []byte
	buf := make([]byte, 512)
	for {
		n, err := conn.Read(buf)
		got += n
		if len(head) < 300 {
			head = append(head, buf[:min(n, 300-len(head))]...)
		}
		if err == io.EOF && got > size {
			return "read_all", ""
		}
		if err != nil {
			if ctx.Err() != nil {
				return "stopped", ""
			}
			return "cut_after_" + strconv.Itoa(got>>18<<8) + "KiB+", strings.ReplaceAll(string(head), "\r\n", " | ")
		}
		sleep(ctx, 200*time.Millisecond)
	}
}

// nbSample is one look at a proxy process.
type nbSample struct {
	at                     time.Duration
	goroutines, fds        float64
	rssMiB                 float64
	pending, sessions      float64 // pool gauges (-1: the proxy has none)
	children, queued       float64
	upSessions, metricsKiB float64
}

func (s nbSample) String() string {
	return fmt.Sprintf("t=%3.0fs goroutines=%.0f fds=%.0f rss=%.1fMiB pending=%.0f sessions=%.0f children=%.0f upstream_sessions=%.0f queued=%.0fB metrics=%.1fKiB",
		s.at.Seconds(), s.goroutines, s.fds, s.rssMiB, s.pending, s.sessions, s.children, s.upSessions, s.queued, s.metricsKiB)
}

// sample reads p's /metrics and its RSS from /proc.
func (p *nbProxy) sample(c *http.Client, at time.Duration) nbSample {
	s := nbSample{at: at, goroutines: -1, fds: -1, pending: -1, sessions: -1, children: -1, queued: -1, upSessions: -1}
	s.rssMiB = float64(testenv.RSS(p.pid)) / (1 << 20)
	resp, err := c.Get(p.base + "/metrics")
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s.metricsKiB = float64(len(b)) / 1024
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		f, _ := strconv.ParseFloat(v, 64)
		switch name {
		case "go_goroutines":
			s.goroutines = f
		case "process_open_fds":
			s.fds = f
		case "mrtr_proxy_pending_rounds":
			s.pending = f
		case "mrtr_legacy_sessions":
			s.sessions = f
		case "mrtr_upstream_children":
			s.children = f
		case "mrtr_upstream_queued_bytes":
			s.queued = f
		case "mrtr_upstream_sessions":
			s.upSessions = f
		}
	}
	return s
}

// sampler looks at every proxy each interval until ctx ends; logf, when
// not nil, hears each sample as it is taken.
func (e *nbEnv) sampler(ctx context.Context, every time.Duration, logf func(string, ...any)) func() map[string][]nbSample {
	out := map[string][]nbSample{}
	done := make(chan struct{})
	c := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	go func() {
		defer close(done)
		for {
			for _, p := range e.proxies {
				s := p.sample(c, time.Since(start))
				out[p.name] = append(out[p.name], s)
				if logf != nil {
					logf("%s: %s", p.name, s)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	}()
	return func() map[string][]nbSample { <-done; return out }
}

// peak is the largest of each figure over samples.
func peak(samples []nbSample) nbSample {
	var m nbSample
	if len(samples) > 0 {
		m = samples[0]
	}
	for _, s := range samples {
		m.goroutines = max(m.goroutines, s.goroutines)
		m.fds = max(m.fds, s.fds)
		m.rssMiB = max(m.rssMiB, s.rssMiB)
		m.pending = max(m.pending, s.pending)
		m.sessions = max(m.sessions, s.sessions)
		m.children = max(m.children, s.children)
		m.queued = max(m.queued, s.queued)
		m.upSessions = max(m.upSessions, s.upSessions)
		m.metricsKiB = max(m.metricsKiB, s.metricsKiB)
		m.at = max(m.at, s.at)
	}
	return m
}

// The ceiling each proxy stays under while one principal floods it with
// defaultFlood, at the pools' default caps (nbCaps): her 16 open calls
// (about 3 goroutines and an upstream connection each), her 16 legacy
// sessions, and 48 slow connections, each a goroutine and a file.
const (
	ceilGoroutines = 400
	ceilFiles      = 256
	ceilRSSMiB     = 384
)

// checkCeiling fails tb when a proxy's peak passed the ceiling.
func checkCeiling(tb testing.TB, name string, pk nbSample) {
	tb.Helper()
	if pk.goroutines > ceilGoroutines || pk.fds > ceilFiles || pk.rssMiB > ceilRSSMiB {
		tb.Errorf("%s: peak %s; the ceiling is %d goroutines, %d open files, %d MiB", name, pk, ceilGoroutines, ceilFiles, ceilRSSMiB)
	}
}

// effects counts the upstream's effect lines by booking id.
func (p *nbProxy) effectsByID(tb testing.TB) map[string]int {
	b, err := os.ReadFile(p.effects)
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		if id, _, ok := strings.Cut(line, " "); ok {
			out[id]++
		}
	}
	return out
}

// checkExactlyOnce fails tb unless every booking alice saw completed left
// exactly one effect upstream, nothing else of hers did, and none of
// mallory's (she never answered) did.
func checkExactlyOnce(tb testing.TB, p *nbProxy, runs ...*honestRun) int {
	tb.Helper()
	eff := p.effectsByID(tb)
	seen := map[string]bool{}
	for _, r := range runs {
		for _, id := range r.done {
			seen[id] = true
			if eff[id] != 1 {
				tb.Errorf("%s: booking %s left %d effects upstream, want 1", p.name, id, eff[id])
			}
		}
	}
	for id, n := range eff {
		if !seen[id] {
			tb.Errorf("%s: the upstream recorded %d effects of %s, which no client saw booked", p.name, n, id)
		}
	}
	return len(seen)
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("%s=%q: want a duration such as 30s", name, v)
	}
	return d
}

// BenchmarkHostileNeighbour: alice books through both proxies, alone
// (quiet) and while mallory floods them (hostile), in one run with the
// same binaries; the phases alternate (MRTR_BENCH_CYCLES times quiet then
// hostile) so that the machine's drift falls on both alike. It reports
// her p50 and p99 per booking (two requests: the call and the retry with
// her answer) in each phase, her bookings completed and failed, and each
// proxy's peak goroutines, open files and RSS in each phase (sampled
// every 250 ms), with the pools' gauges at their peak. Every booking
// alice saw completed must have left exactly one effect upstream, and
// none of mallory's may have; with the default flood the peaks must stay
// under the ceiling (ceilGoroutines...). One iteration is the whole run (about 80 s
// after the builds); other jobs may share the machine's cores:
//
//	go test ./internal/proxy -run '^$' -bench BenchmarkHostileNeighbour -benchtime 1x -v
//	MRTR_BENCH_QUIET=8s MRTR_BENCH_HOSTILE=16s MRTR_BENCH_CYCLES=3 go test ...   # each phase's length, per cycle
//	MRTR_NEIGHBOUR_BIN=/path/mrtr-wasm go test ...   # that build instead of this tree's
//	MRTR_NEIGHBOUR_PAUSE=20ms go test ...   # mallory's pause between calls (5ms)
//	MRTR_NEIGHBOUR_FLOOD=rounds=0,slow_readers=64 go test ...   # her workers and connections, per proxy
//	MRTR_NEIGHBOUR_LOGS=/tmp/logs go test ...   # keep the proxies' logs
func BenchmarkHostileNeighbour(b *testing.B) {
	quiet := envDuration(b, "MRTR_BENCH_QUIET", 8*time.Second)
	hostileFor := envDuration(b, "MRTR_BENCH_HOSTILE", 16*time.Second)
	cycles, _ := strconv.Atoi(os.Getenv("MRTR_BENCH_CYCLES"))
	if cycles <= 0 {
		cycles = 3
	}
	fl := flood(b)
	e := startNeighbour(b)
	for _, p := range e.proxies {
		b.Logf("%s proxy (pid %d) caps: %s", p.name, p.pid, p.caps)
	}
	b.Logf("mallory, per proxy: %+v", fl)
	b.ResetTimer() // the builds and starts are not the run
	for i := 0; i < b.N; i++ {
		runs := map[string][]*honestRun{}
		keep := func(phase string, r map[string]*honestRun) {
			for name, run := range r {
				runs[name] = append(runs[name], run)
				runs[name+"/"+phase] = append(runs[name+"/"+phase], run)
			}
		}
		keep("warm", e.honest(context.Background(), fmt.Sprintf("warm%d", i), 10))
		samples := map[string][]nbSample{}
		counts := newHostileCounts()
		cpu := map[string][]string{}
		for c := range cycles {
			ctx, cancel := context.WithTimeout(context.Background(), quiet)
			stop := e.sampler(ctx, 250*time.Millisecond, nil)
			c0 := e.cpu()
			keep("quiet", e.honest(ctx, fmt.Sprintf("quiet%d.%d", i, c), 0))
			cpu["quiet"] = append(cpu["quiet"], e.cpuSince(c0))
			cancel()
			for name, ss := range stop() {
				samples[name+"/quiet"] = append(samples[name+"/quiet"], ss...)
			}

			ctx, cancel = context.WithTimeout(context.Background(), hostileFor)
			stop = e.sampler(ctx, 250*time.Millisecond, nil)
			floodDone := make(chan struct{})
			go func() { e.hostile(ctx, fl, counts); close(floodDone) }()
			sleep(ctx, 2*time.Second) // let the flood fill the pools first
			c0 = e.cpu()
			keep("hostile", e.honest(ctx, fmt.Sprintf("hostile%d.%d", i, c), 0))
			cpu["hostile"] = append(cpu["hostile"], e.cpuSince(c0))
			cancel()
			<-floodDone
			for name, ss := range stop() {
				samples[name+"/hostile"] = append(samples[name+"/hostile"], ss...)
			}
		}
		for _, phase := range []string{"quiet", "hostile"} {
			b.Logf("%s CPU, by cycle: %s", phase, strings.Join(cpu[phase], "; "))
		}
		b.Logf("mallory's requests (both proxies, %.0f/s while she ran): %s", float64(counts.total())/(hostileFor.Seconds()*float64(cycles)), counts)
		merge := func(rs []*honestRun) *honestRun {
			m := &honestRun{}
			for _, r := range rs {
				m.lat = append(m.lat, r.lat...)
				m.done = append(m.done, r.done...)
				m.failed += r.failed
				m.errs = append(m.errs, r.errs...)
			}
			return m
		}
		for _, p := range e.proxies {
			all, qr, hr := merge(runs[p.name]), merge(runs[p.name+"/quiet"]), merge(runs[p.name+"/hostile"])
			if all.failed > 0 {
				b.Errorf("%s: %d of alice's bookings failed: %q", p.name, all.failed, all.errs)
			}
			n := checkExactlyOnce(b, p, all)
			qp, hp := peak(samples[p.name+"/quiet"]), peak(samples[p.name+"/hostile"])
			b.Logf("%s: alice quiet: %d bookings p50 %.2f ms p99 %.2f ms; hostile: %d bookings p50 %.2f ms p99 %.2f ms (p50 %.2fx); failed %d; %d bookings with exactly one effect each",
				p.name, len(qr.lat), ms(pct(qr.lat, .5)), ms(pct(qr.lat, .99)), len(hr.lat), ms(pct(hr.lat, .5)), ms(pct(hr.lat, .99)),
				ms(pct(hr.lat, .5))/ms(pct(qr.lat, .5)), all.failed, n)
			if fl == defaultFlood {
				checkCeiling(b, p.name, hp)
			}
			b.Logf("%s: peak quiet:   %s", p.name, qp)
			b.Logf("%s: peak hostile: %s", p.name, hp)
			m := p.name + "-"
			b.ReportMetric(ms(pct(qr.lat, .5)), m+"quiet-p50-ms")
			b.ReportMetric(ms(pct(qr.lat, .99)), m+"quiet-p99-ms")
			b.ReportMetric(ms(pct(hr.lat, .5)), m+"hostile-p50-ms")
			b.ReportMetric(ms(pct(hr.lat, .99)), m+"hostile-p99-ms")
			b.ReportMetric(float64(len(hr.lat)), m+"hostile-bookings")
			b.ReportMetric(float64(all.failed), m+"failed-bookings")
			b.ReportMetric(hp.goroutines, m+"peak-goroutines")
			b.ReportMetric(hp.fds, m+"peak-fds")
			b.ReportMetric(hp.rssMiB, m+"peak-RSS-MiB")
		}
	}
}

// TestNeighbourSoak (MRTR_SOAK=2m in ./test.sh; MRTR_SOAK=30m for the
// long one): alice books through both proxies while mallory floods them,
// for the whole run; each proxy's goroutines, open files and RSS are
// sampled every 10 s (MRTR_SOAK_EVERY). After a warm-up (a quarter of
// the run, at most a minute) they must stay flat: the highest sample of
// the second half at most 25% above the first half's highest, plus 50
// goroutines, 25 files and 16 MiB (a round's or slow connection's
// coming and going), and under the ceiling (ceilGoroutines...). Nothing
// is lost: every booking alice starts completes, and each leaves exactly
// one effect upstream.
func TestNeighbourSoak(t *testing.T) {
	v := os.Getenv("MRTR_SOAK")
	if v == "" {
		t.Skip("MRTR_SOAK unset (./test.sh sets 2m; 30m for the long soak)")
	}
	d := envDuration(t, "MRTR_SOAK", 0)
	every := envDuration(t, "MRTR_SOAK_EVERY", 10*time.Second)
	fl := flood(t)
	e := startNeighbour(t)
	for _, p := range e.proxies {
		t.Logf("%s proxy (pid %d) caps: %s", p.name, p.pid, p.caps)
	}
	warm := e.honest(context.Background(), "warm", 5)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	stopSampling := e.sampler(ctx, every, t.Logf)
	counts := newHostileCounts()
	floodDone := make(chan struct{})
	go func() { e.hostile(ctx, fl, counts); close(floodDone) }()
	c0 := e.cpu()
	h := e.honest(ctx, "soak", 0)
	t.Logf("CPU: %s", e.cpuSince(c0))
	cancel()
	<-floodDone
	samples := stopSampling()
	t.Logf("mallory's requests (both proxies, %.0f/s): %s", float64(counts.total())/d.Seconds(), counts)
	warmUp := min(d/4, time.Minute)
	for _, p := range e.proxies {
		ss := samples[p.name]
		r := h[p.name]
		n := checkExactlyOnce(t, p, warm[p.name], r)
		t.Logf("%s: alice: %d bookings, p50 %.2f ms, p99 %.2f ms, %d failed; %d with exactly one effect each",
			p.name, len(r.lat), ms(pct(r.lat, .5)), ms(pct(r.lat, .99)), r.failed, n)
		if r.failed+warm[p.name].failed > 0 || len(r.lat) == 0 {
			t.Errorf("%s: alice's bookings: %d completed, %d failed: %q", p.name, len(r.lat), r.failed, r.errs)
		}
		var after []nbSample
		for _, s := range ss {
			if s.at >= warmUp {
				after = append(after, s)
			}
		}
		if len(after) < 4 {
			t.Errorf("%s: %d samples after the warm-up, want at least 4 (MRTR_SOAK too short for MRTR_SOAK_EVERY)", p.name, len(after))
			continue
		}
		first, second := peak(after[:len(after)/2]), peak(after[len(after)/2:])
		t.Logf("%s: first %s", p.name, ss[0])
		t.Logf("%s: last  %s", p.name, ss[len(ss)-1])
		t.Logf("%s: peak  %s", p.name, peak(ss))
		if fl == defaultFlood {
			checkCeiling(t, p.name, peak(ss))
		}
		for _, c := range []struct {
			what          string
			first, second float64
			slack         float64
		}{
			{"goroutines", first.goroutines, second.goroutines, 50},
			{"open files", first.fds, second.fds, 25},
			{"RSS MiB", first.rssMiB, second.rssMiB, 16},
		} {
			if c.first < 0 || c.second < 0 {
				t.Errorf("%s: %s not sampled", p.name, c.what)
			} else if c.second > c.first*1.25+c.slack {
				t.Errorf("%s: %s grew after the warm-up: peak %.1f in the first half, %.1f in the second", p.name, c.what, c.first, c.second)
			}
		}
	}
}
