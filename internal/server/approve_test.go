package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
)

// TestCancelBookingNeedsApproval: the shipped policy makes cancel_booking
// wait for the caller's yes. Nothing is cancelled before it, a no is an
// error result, the yes cancels once and replays get the stored result.
func TestCancelBookingNeedsApproval(t *testing.T) {
	ts, store := newTestServer(t, nil)
	u := ts.URL + "/mcp"
	ctx := context.Background()
	b, err := store.AddBooking(ctx, crm.Booking{Principal: "anonymous", OperationID: "op-1", Name: "Ann", Email: "ann@example.com", Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if bs, _ := store.ListBookings(ctx, "anonymous"); len(bs) != 1 {
		t.Fatalf("the test booking is not the anonymous caller's: %v", bs)
	}
	good := meta("2026-07-28", caps)
	call := func(args, retry string) rpcResp {
		return post(t, u, std("tools/call", "cancel_booking"), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"_meta":`+good+`,"name":"cancel_booking","arguments":`+args+retry+`}}`)
	}
	args := `{"booking_id":"` + b.ID + `"}`
	r := call(args, "")
	if string(r.Result["resultType"]) != `"input_required"` || !strings.Contains(string(r.Result["inputRequests"]), `"mrtr.approval"`) ||
		!strings.Contains(string(r.Result["inputRequests"]), "Cancel the booking "+b.ID+". This cannot be undone.") {
		t.Fatalf("first call: %s", r.raw)
	}
	var state string
	_ = json.Unmarshal(r.Result["requestState"], &state)
	answer := func(args, v string) rpcResp {
		return call(args, `,"requestState":"`+state+`","inputResponses":{"mrtr.approval":{"action":"accept","content":{"approve":`+v+`}}}`)
	}
	left := func() int { bs, _ := store.ListBookings(ctx, "anonymous"); return len(bs) }

	if r := answer(args, "false"); string(r.Result["isError"]) != "true" || !strings.Contains(r.raw, "Not approved") || left() != 1 {
		t.Fatalf("no: %s (bookings left %d)", r.raw, left())
	}
	if r := answer(`{"booking_id":"bk_other"}`, "true"); r.Error == nil || r.Error.Code != -32602 || left() != 1 {
		t.Fatalf("other arguments: %s", r.raw)
	}
	first := answer(args, "true")
	if !strings.Contains(first.raw, `"cancelled":true`) || left() != 0 {
		t.Fatalf("yes: %s (bookings left %d)", first.raw, left())
	}
	// A replay is answered from the ledger: the same result, not "no such booking".
	if again := answer(args, "true"); string(again.Result["structuredContent"]) != string(first.Result["structuredContent"]) {
		t.Fatalf("replay: %s\nfirst: %s", again.raw, first.raw)
	}
}
