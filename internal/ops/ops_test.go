package ops

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestReadyzNamesWhatFails(t *testing.T) {
	down := errors.New("unavailable")
	var ledgerErr error
	l := New(Check{"ledger", func(context.Context) error { return ledgerErr }})
	rec := httptest.NewRecorder()
	l.Readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 200 {
		t.Fatalf("ready: %d %s", rec.Code, rec.Body)
	}
	ledgerErr = down
	rec = httptest.NewRecorder()
	l.Readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"ledger":"unavailable"`) {
		t.Fatalf("ledger down: %d %s", rec.Code, rec.Body)
	}
}

func TestDrainWaitsForRequestsInFlight(t *testing.T) {
	l := New()
	release := make(chan struct{})
	h := l.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	srv := httptest.NewServer(h)
	defer srv.Close()
	first := make(chan int, 1)
	go func() {
		resp, err := http.Get(srv.URL)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	for l.InFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	drained := make(chan error, 1)
	go func() { drained <- l.Drain(context.Background()) }()
	for !l.Draining() {
		time.Sleep(time.Millisecond)
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a new request while draining: %d", resp.StatusCode)
	}
	select {
	case <-drained:
		t.Fatal("Drain returned with a request in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if code := <-first; code != 200 {
		t.Fatalf("the request in flight: %d", code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Drain(ctx); err != nil {
		t.Fatalf("a second Drain with nothing in flight: %v", err)
	}
}
