package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

// BenchmarkBookingGuard runs the four guard calls of one complete
// book_demo_call (ask the contact, resume it, ask the slot carrying the
// contact, resume the slot) with the demo's own schemas and the shipped
// policy, in process and without HTTP: the guard's part of a booking, to
// set beside cmd/loadgen's figure for the whole server. Each step's mean
// is reported.
func BenchmarkBookingGuard(b *testing.B) {
	for _, eng := range []struct {
		name string
		e    host.Engine
	}{{"wasm", host.EngineWasm}, {"native", host.EngineNative}} {
		b.Run(eng.name, func(b *testing.B) { benchBooking(b, eng.e) })
	}
}

func benchBooking(b *testing.B, eng host.Engine) {
	ctx := context.Background()
	pol, err := policy.Default(ctx)
	if err != nil {
		b.Fatal(err)
	}
	g, err := host.New(ctx, host.WithKeys(host.NewKeyring()), host.WithPolicy(pol), host.WithEngine(eng), host.WithPoolSize(1))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close(ctx)
	slots := slotSchema(time.Now())
	var s struct {
		Properties struct {
			Slot struct {
				OneOf []struct{ Const string } `json:"oneOf"`
			} `json:"slot"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(slots, &s); err != nil || len(s.Properties.Slot.OneOf) == 0 {
		b.Fatalf("slot schema: %v", err)
	}
	slotAnswer := json.RawMessage(`{"slot":{"action":"accept","content":{"slot":"` + s.Properties.Slot.OneOf[0].Const + `","confirm":true}}}`)
	contactAnswer := json.RawMessage(`{"contact":{"action":"accept","content":{"name":"Ada Lovelace","email":"ada@example.com"}}}`)
	caps := json.RawMessage(`{"elicitation":{"form":{}}}`)

	var step [4]time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := &host.Request{Principal: "anonymous", Method: "tools/call", Target: "book_demo_call",
			Arguments: json.RawMessage(`{"topic":"load test"}`), Capabilities: caps}
		t0 := time.Now()
		r1, err := g.Ask(ctx, req, []host.InputRequest{host.Form(keyContact, "Who should we book the demo call for?", contactSchema)})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		req.RequestState, req.InputResponses = r1.RequestState, contactAnswer
		out, err := g.Resume(ctx, req)
		if err != nil || out.Status != host.Complete {
			b.Fatalf("resume the contact: %v", err)
		}
		t2 := time.Now()
		r2, err := g.Ask(ctx, req, []host.InputRequest{host.Form(keySlot, "Thanks, Ada. When would you like the call?", slots)}, host.WithPrevious(out))
		if err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		req.RequestState, req.InputResponses = r2.RequestState, slotAnswer
		out, err = g.Resume(ctx, req)
		if err != nil || out.Status != host.Complete || len(out.Answers) != 2 {
			b.Fatalf("resume the slot: %v", err)
		}
		t4 := time.Now()
		step[0] += t1.Sub(t0)
		step[1] += t2.Sub(t1)
		step[2] += t3.Sub(t2)
		step[3] += t4.Sub(t3)
	}
	for i, name := range []string{"ask-contact", "resume-contact", "ask-slot", "resume-slot"} {
		b.ReportMetric(float64(step[i].Microseconds())/float64(b.N), name+"-µs")
	}
}
