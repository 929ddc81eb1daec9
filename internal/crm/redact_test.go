package crm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact/redacttest"
)

// A connect link's id and a booking's personal details stay out of every
// printing channel; both come from a real store.
func TestRedaction(t *testing.T) {
	ctx := context.Background()
	s := open(t, "sqlite:"+filepath.Join(t.TempDir(), "crm.db"))
	defer s.Close()
	id, err := s.NewConnect(ctx, "alice", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := s.Connect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	redacttest.Check(t, cs, []string{id}, nil, "alice", "id=redacted")

	b, err := s.AddBooking(ctx, Booking{Principal: "alice", OperationID: "op-9", Name: "Qx Secretname", Email: "zq-secret-88@example.com", Topic: "topic-secret-1", Slot: "2026-12-01T15:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	type plain Booking // the same fields without the methods: the default JSON
	wire, _ := json.Marshal(plain(b))
	redacttest.Check(t, b, []string{"Qx Secretname", "zq-secret-88", "topic-secret-1"}, wire, b.ID, "op-9")
}
