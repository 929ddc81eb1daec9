// Command loadgen runs complete two-round demo bookings against a running
// `mrtr-wasm serve` over loopback and reports completed bookings per
// second, per-request latency (p50, p99) and the server's CPU per booking
// with the guard's share (from the server's /metrics).
//
// One booking is three requests: book_demo_call (asks for the contact),
// the retry with the contact (asks for the slot), the retry with the slot
// and the confirmation (writes the booking through the ledger).
//
//	mrtr-wasm serve --addr 127.0.0.1:18080 --data /tmp/bench &
//	go run ./cmd/loadgen --url http://127.0.0.1:18080 --duration 20s --concurrency 16
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	base := flag.String("url", "http://127.0.0.1:8080", "server base URL (the MCP endpoint is URL/mcp)")
	conc := flag.Int("concurrency", 16, "bookings in flight at once")
	dur := flag.Duration("duration", 20*time.Second, "how long to run (bounded: at most 5 minutes)")
	token := flag.String("token", "", "bearer token, if the server has --auth-tokens")
	flag.Parse()
	if *dur > 5*time.Minute {
		*dur = 5 * time.Minute
	}
	if err := run(*base, *token, *conc, *dur, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

const metaJSON = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`

type client struct {
	http  *http.Client
	url   string
	token string
	id    atomic.Int64
}

type result struct {
	ResultType    string          `json:"resultType"`
	RequestState  string          `json:"requestState"`
	InputRequests json.RawMessage `json:"inputRequests"`
	Structured    struct {
		Booked bool `json:"booked"`
	} `json:"structuredContent"`
}

func (c *client) call(ctx context.Context, args, state, responses string) (*result, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":%s,"name":"book_demo_call","arguments":%s`, c.id.Add(1), metaJSON, args)
	if state != "" {
		fmt.Fprintf(&b, `,"requestState":%q,"inputResponses":%s`, state, responses)
	}
	b.WriteString("}}")
	req, err := http.NewRequestWithContext(ctx, "POST", c.url, &b)
	if err != nil {
		return nil, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", "2026-07-28")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", "book_demo_call")
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Result *result          `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Result == nil {
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, body)
	}
	return r.Result, nil
}

// slotOf picks the first slot offered in the round-2 form.
func slotOf(inputs json.RawMessage) (string, error) {
	var m map[string]struct {
		Params struct {
			RequestedSchema struct {
				Properties struct {
					Slot struct {
						OneOf []struct{ Const string } `json:"oneOf"`
					} `json:"slot"`
				} `json:"properties"`
			} `json:"requestedSchema"`
		} `json:"params"`
	}
	if err := json.Unmarshal(inputs, &m); err != nil || len(m["slot"].Params.RequestedSchema.Properties.Slot.OneOf) == 0 {
		return "", errors.New("round 2 did not offer a slot")
	}
	return m["slot"].Params.RequestedSchema.Properties.Slot.OneOf[0].Const, nil
}

// booking runs one complete two-round booking and records each request's
// latency.
func (c *client) booking(ctx context.Context, n int64, lat *[]time.Duration) error {
	args := fmt.Sprintf(`{"topic":"load %d"}`, n)
	timed := func(state, responses string) (*result, error) {
		t := time.Now()
		r, err := c.call(ctx, args, state, responses)
		*lat = append(*lat, time.Since(t))
		return r, err
	}
	r1, err := timed("", "")
	if err != nil {
		return err
	}
	if r1.ResultType != "input_required" {
		return fmt.Errorf("round 1: %s", r1.ResultType)
	}
	contact := fmt.Sprintf(`{"contact":{"action":"accept","content":{"name":"Load Tester %d","email":"load%d@example.com"}}}`, n, n)
	r2, err := timed(r1.RequestState, contact)
	if err != nil {
		return err
	}
	slot, err := slotOf(r2.InputRequests)
	if err != nil {
		return err
	}
	r3, err := timed(r2.RequestState, fmt.Sprintf(`{"slot":{"action":"accept","content":{"slot":%q,"confirm":true}}}`, slot))
	if err != nil {
		return err
	}
	if r3.ResultType != "complete" || !r3.Structured.Booked {
		return fmt.Errorf("round 3 did not book: %s", r3.ResultType)
	}
	return nil
}

// scrape reads the server's CPU seconds and the guard's time.
type sample struct{ cpu, ask, resume, once float64 }

func scrape(url string) (sample, error) {
	var s sample
	resp, err := http.Get(url)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, _ := strconv.ParseFloat(val, 64)
		switch name {
		case "process_cpu_seconds_total":
			s.cpu = v
		case `mrtr_guard_seconds_sum{op="ask"}`:
			s.ask = v
		case `mrtr_guard_seconds_sum{op="resume"}`:
			s.resume = v
		case `mrtr_guard_seconds_sum{op="once"}`:
			s.once = v
		}
	}
	return s, sc.Err()
}

func run(base, token string, conc int, dur time.Duration, out io.Writer) error {
	base = strings.TrimRight(base, "/")
	tr := &http.Transport{MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc * 2, IdleConnTimeout: time.Minute}
	c := &client{http: &http.Client{Transport: tr, Timeout: 30 * time.Second}, url: base + "/mcp", token: token}
	ctx := context.Background()
	// Warm up (compiles nothing, but fills pools and connections).
	var warm []time.Duration
	for i := range conc {
		if err := c.booking(ctx, int64(-1-i), &warm); err != nil {
			return fmt.Errorf("warm-up booking: %w", err)
		}
	}
	before, err := scrape(base + "/metrics")
	if err != nil {
		return err
	}
	var done, failed atomic.Int64
	var firstErr atomic.Value
	lats := make([][]time.Duration, conc)
	stop := time.Now().Add(dur)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<16)
			for n := int64(w); time.Now().Before(stop); n += int64(conc) {
				if err := c.booking(ctx, n, &lat); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				done.Add(1)
			}
			lats[w] = lat
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after, err := scrape(base + "/metrics")
	if err != nil {
		return err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(float64(len(all))*p))]
	}
	n := float64(done.Load())
	cpu := after.cpu - before.cpu
	guard := (after.ask - before.ask) + (after.resume - before.resume)
	fmt.Fprintf(out, "concurrency %d, %v: %d bookings completed, %d failed\n", conc, elapsed.Round(time.Millisecond), done.Load(), failed.Load())
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(out, "first failure: %s\n", e)
	}
	fmt.Fprintf(out, "bookings/s: %.0f   requests/s: %.0f\n", n/elapsed.Seconds(), float64(len(all))/elapsed.Seconds())
	fmt.Fprintf(out, "latency per request: p50 %.2f ms, p99 %.2f ms\n", ms(pct(0.50)), ms(pct(0.99)))
	if n > 0 && cpu > 0 {
		fmt.Fprintf(out, "server CPU per booking: %.3f ms (%.2f cores busy)\n", cpu/n*1e3, cpu/elapsed.Seconds())
		// Wall time, from the server's histogram: with more requests in
		// flight than pooled instances it includes waiting for one, so it
		// is an upper bound on the guard's CPU (BenchmarkBookingGuard in
		// internal/server measures the CPU alone).
		fmt.Fprintf(out, "guard (Ask+Resume) wall time per booking: %.3f ms (%.0f%% of the server's CPU per booking; includes waiting for a free instance); Once (ledger + CRM write): %.3f ms\n",
			guard/n*1e3, 100*guard/cpu, (after.once-before.once)/n*1e3)
	}
	if done.Load() == 0 {
		return errors.New("no booking completed")
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
