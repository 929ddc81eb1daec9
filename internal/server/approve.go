package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/guest/core"
	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
)

var cancelTool = &mcp.Tool{
	Name:        "cancel_booking",
	Title:       "Cancel a booking",
	Description: "Cancels one of the calling user's demo call bookings. The deployment's policy makes it wait for the user's yes (a confirm form); nothing is cancelled before it.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"booking_id":{"type":"string","description":"The booking's id, as list_bookings shows it.","minLength":1,"maxLength":64}},"required":["booking_id"],"additionalProperties":false}`),
	OutputSchema: json.RawMessage(`{"type":"object","properties":{"cancelled":{"type":"boolean"},` +
		`"booking":{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"},"email":{"type":"string"},"topic":{"type":"string"},"slot":{"type":"string"},"created_at":{"type":"string"}}},` +
		`"message":{"type":"string"}},"required":["cancelled"]}`),
	Annotations: &mcp.ToolAnnotations{DestructiveHint: new(bool)},
}

func init() { *cancelTool.Annotations.DestructiveHint = true }

func parseCancelArgs(raw json.RawMessage) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return "", errors.New("arguments must be an object with booking_id")
	}
	var id string
	for k, v := range m {
		if k != "booking_id" {
			return "", fmt.Errorf("unknown argument %q", k)
		}
		if err := json.Unmarshal(v, &id); err != nil {
			return "", errors.New("booking_id must be a string")
		}
	}
	if id == "" || len(id) > 64 {
		return "", errors.New("booking_id must be 1 to 64 characters")
	}
	return id, nil
}

// cancelBooking cancels a booking once the policy's approval is given:
// the first call returns the guard's confirm form, the retry with a yes
// cancels through the ledger (once, replays get the stored result), a no
// is an error result that says nothing ran.
func (s *Server) cancelBooking(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := HostRequest(r)
	if err != nil {
		return nil, invalidParams("malformed request")
	}
	c := s.begin("cancel_booking", req)
	id, err := parseCancelArgs(req.Arguments)
	if err != nil {
		c.end(ctx, "rejected", nil)
		return nil, invalidParams(err.Error())
	}
	out, err := s.guard.Approve(ctx, req)
	if err != nil {
		return c.fail(ctx, err)
	}
	cancel := func(ctx context.Context) ([]byte, error) {
		b, err := s.cfg.CRM.CancelBooking(ctx, req.Principal, id)
		if errors.Is(err, crm.ErrNotFound) {
			return []byte(`null`), nil
		}
		if err != nil {
			return nil, err
		}
		return json.Marshal(b)
	}
	var res []byte
	switch {
	case out == nil: // the deployment's policy requires no approval
		res, err = cancel(ctx)
	case out.Status == host.InputRequired:
		c.op, c.round = out.OperationID, out.Round
		return c.inputRequired(ctx, out.InputRequired)
	case out.Status == host.Declined && slices.Contains(out.Declined, core.ApprovalKey):
		c.end(ctx, "declined", nil)
		return cancelResult(false, nil, "Not approved: booking "+id+" was not cancelled. Nothing ran.", true), nil
	case out.Status == host.Cancelled:
		c.end(ctx, "cancelled", nil)
		return cancelResult(false, nil, "Nothing was cancelled: the confirmation was dismissed. You can ask again.", false), nil
	case out.Status == host.Complete:
		c.op, c.round = out.OperationID, out.Round
		var replay bool
		res, replay, err = s.guard.Once(ctx, out, cancel)
		if err == nil {
			label := "run"
			if replay {
				label = "replay"
			}
			s.metrics.Effects.WithLabelValues(c.tool, label).Inc()
		}
	default:
		return c.fail(ctx, &host.Error{Code: host.CodeInternal, Message: "unexpected outcome"})
	}
	if err != nil {
		if _, ok := host.AsError(err); ok && res == nil {
			return c.fail(ctx, err)
		}
		if res == nil {
			c.end(ctx, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the booking could not be cancelled; nothing changed, please retry"}
		}
	}
	c.end(ctx, "complete", err)
	var b *crm.Booking
	if err := json.Unmarshal(res, &b); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	if b == nil {
		return cancelResult(false, nil, "You have no booking "+id+": nothing was cancelled.", true), nil
	}
	return cancelResult(true, b, fmt.Sprintf("Cancelled: booking %s (%s).", b.ID, slotTitle(b.Slot)), false), nil
}

func cancelResult(cancelled bool, b *crm.Booking, msg string, isErr bool) *mcp.CallToolResult {
	sc := map[string]any{"cancelled": cancelled, "message": msg}
	if b != nil {
		sc["booking"] = b
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, StructuredContent: sc, IsError: isErr}
}
