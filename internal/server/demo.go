package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/internal/crm"
)

// The input request keys of the demo tools.
const (
	keyContact  = "contact"
	keySlot     = "slot"
	keyCalendar = "calendar"
)

var contactSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"name":{"type":"string","title":"Your name","minLength":1,"maxLength":200},` +
	`"email":{"type":"string","title":"Work email","format":"email","maxLength":254}},` +
	`"required":["name","email"]}`)

func (s *Server) addDemoTools() {
	s.addTool(&mcp.Tool{
		Name:        "book_demo_call",
		Title:       "Book a demo call",
		Description: "Books a demo call with our team. Asks the user for their name and work email, then for a time slot and a confirmation. Nothing is booked until every answer is in.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string","description":"What the call should be about (optional).","maxLength":200}},"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"booked":{"type":"boolean"},` +
			`"booking":{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"},"email":{"type":"string"},"topic":{"type":"string"},"slot":{"type":"string"},"created_at":{"type":"string"}}},` +
			`"message":{"type":"string"}},"required":["booked"]}`),
	}, s.bookDemoCall)
	s.addTool(&mcp.Tool{
		Name:        "list_bookings",
		Title:       "List my bookings",
		Description: "Lists the demo calls booked by the calling user. Read-only.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"bookings":{"type":"array","items":{"type":"object",` +
			`"properties":{"id":{"type":"string"},"name":{"type":"string"},"email":{"type":"string"},"topic":{"type":"string"},"slot":{"type":"string"},"created_at":{"type":"string"}},` +
			`"required":["id","name","email","topic","created_at"]}}},"required":["bookings"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, s.listBookings)
	s.addTool(&mcp.Tool{
		Name:        "connect_calendar",
		Title:       "Connect a calendar",
		Description: "Connects the user's outside calendar. The API key is entered on a page of this server (URL mode), never in the chat or the MCP client.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
	}, s.connectCalendar)
	s.addTool(cancelTool, s.cancelBooking)
}

// call is the per-call context every guarded handler logs once at its end.
type call struct {
	s      *Server
	tool   string
	start  time.Time
	req    *host.Request
	op     string
	round  int
	reason string
}

func (s *Server) begin(tool string, req *host.Request) *call {
	return &call{s: s, tool: tool, start: time.Now(), req: req}
}

// end records the outcome in the metrics and writes one log line: tool,
// principal, outcome, round, operation id, and for refusals the internal
// reason. Never arguments, answers, states or keys.
func (c *call) end(ctx context.Context, outcome string, err error) {
	c.s.metrics.Outcomes.WithLabelValues(c.tool, outcome).Inc()
	attrs := []slog.Attr{
		slog.String("tool", c.tool),
		slog.String("principal", c.req.Principal),
		slog.String("outcome", outcome),
		slog.Bool("retry", c.req.IsRetry()),
		slog.Duration("took", time.Since(c.start)),
	}
	if c.op != "" {
		attrs = append(attrs, slog.String("op", c.op), slog.Int("round", c.round))
	}
	level := slog.LevelInfo
	if err != nil {
		if e, ok := host.AsError(err); ok {
			attrs = append(attrs, slog.String("code", e.Code))
			if e.Reason != "" {
				attrs = append(attrs, slog.String("reason", e.Reason))
			}
		} else {
			attrs = append(attrs, slog.String("code", "internal"))
		}
		level = slog.LevelWarn
		if outcome == "error" {
			level = slog.LevelError
		}
	}
	c.s.log.LogAttrs(ctx, level, "tool call", attrs...)
}

// fail ends the call with a guard error mapped to JSON-RPC.
func (c *call) fail(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	outcome := "rejected"
	if e, ok := host.AsError(err); ok && e.JSONRPCCode() == -32603 {
		outcome = "error"
	} else if !ok {
		outcome = "error"
	}
	c.end(ctx, outcome, err)
	return nil, RPCError(err)
}

// ask seals a round and returns it.
func (c *call) ask(ctx context.Context, inputs []host.InputRequest, opts ...host.AskOption) (*mcp.CallToolResult, error) {
	res, err := c.s.guard.Ask(ctx, c.req, inputs, opts...)
	if err != nil {
		return c.fail(ctx, err)
	}
	return c.inputRequired(ctx, res)
}

// inputRequired ends the call with an input_required result (a new round
// or a re-ask).
func (c *call) inputRequired(ctx context.Context, res *host.InputRequiredResult) (*mcp.CallToolResult, error) {
	out, err := InputRequired(res)
	if err != nil {
		return c.fail(ctx, err)
	}
	c.end(ctx, "input_required", nil)
	return out, nil
}

func (c *call) resume(ctx context.Context) (*host.Outcome, error) {
	out, err := c.s.guard.Resume(ctx, c.req)
	if out != nil {
		c.op, c.round = out.OperationID, out.Round
	}
	return out, err
}

type bookArgs struct {
	Topic string `json:"topic"`
}

func parseBookArgs(raw json.RawMessage) (bookArgs, error) {
	var a bookArgs
	if len(raw) == 0 || string(raw) == "null" {
		return a, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return a, errors.New("arguments must be an object")
	}
	for k, v := range m {
		if k != "topic" {
			return a, fmt.Errorf("unknown argument %q", k)
		}
		if err := json.Unmarshal(v, &a.Topic); err != nil {
			return a, errors.New("topic must be a string")
		}
	}
	if utf8.RuneCountInString(a.Topic) > 200 {
		return a, errors.New("topic is longer than 200 characters")
	}
	return a, nil
}

func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// bookDemoCall: round 1 asks who (name, work email); round 2 asks when (a
// slot) and for a confirmation, carrying round 1's answers in the sealed
// state; only then one booking is written, through the ledger.
func (s *Server) bookDemoCall(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := HostRequest(r)
	if err != nil {
		return nil, invalidParams("malformed request")
	}
	c := s.begin("book_demo_call", req)
	args, err := parseBookArgs(req.Arguments)
	if err != nil {
		c.end(ctx, "rejected", nil)
		return nil, invalidParams(err.Error())
	}
	if !req.IsRetry() {
		msg := "Who should we book the demo call for?"
		if args.Topic != "" {
			msg = "Who should we book the demo call about “" + args.Topic + "” for?"
		}
		return c.ask(ctx, []host.InputRequest{host.Form(keyContact, msg, contactSchema)})
	}
	out, err := c.resume(ctx)
	if err != nil {
		return c.fail(ctx, err)
	}
	switch out.Status {
	case host.InputRequired:
		return c.inputRequired(ctx, out.InputRequired)
	case host.Declined:
		c.end(ctx, "declined", nil)
		return bookResult(false, nil, "No demo call was booked: you declined. Nothing was saved."), nil
	case host.Cancelled:
		c.end(ctx, "cancelled", nil)
		return bookResult(false, nil, "The booking was cancelled and nothing was saved. You can ask to book a demo call again at any time."), nil
	case host.Complete:
	default:
		return c.fail(ctx, &host.Error{Code: host.CodeInternal, Message: "unexpected outcome"})
	}
	var contact struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	}
	if err := out.Content(keyContact, &contact); err != nil {
		return c.fail(ctx, &host.Error{Code: host.CodeInternal, Message: "the contact answer is missing"})
	}
	if _, ok := out.Answers[keySlot]; !ok {
		// Round 1 is complete: ask round 2, keeping round 1's answers.
		first := strings.SplitN(strings.TrimSpace(contact.Name), " ", 2)[0]
		return c.ask(ctx, []host.InputRequest{host.Form(keySlot, "Thanks, "+first+". When would you like the call?", slotSchema(time.Now()))}, host.WithPrevious(out))
	}
	var slot struct {
		Slot    string `json:"slot"`
		Confirm bool   `json:"confirm"`
	}
	if err := out.Content(keySlot, &slot); err != nil {
		return c.fail(ctx, &host.Error{Code: host.CodeInternal, Message: "the slot answer is missing"})
	}
	if !slot.Confirm {
		c.end(ctx, "declined", nil)
		return bookResult(false, nil, "No demo call was booked: you did not confirm. Nothing was saved."), nil
	}
	booking := crm.Booking{
		Principal: req.Principal, OperationID: out.OperationID,
		Name: contact.Name, Email: contact.Email, Topic: args.Topic, Slot: slot.Slot,
	}
	var res []byte
	var replay bool
	if s.cfg.TxLedger != nil {
		// The booking, the claim and the stored result commit together:
		// a crash anywhere leaves all or nothing.
		res, replay, err = s.guard.OnceTx(ctx, out, s.cfg.TxLedger.Tx(func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			return marshalBooking(s.cfg.CRM.AddBookingTx(ctx, tx, booking))
		}))
	} else {
		res, replay, err = s.guard.Once(ctx, out, func(ctx context.Context) ([]byte, error) {
			return marshalBooking(s.cfg.CRM.AddBooking(ctx, booking))
		})
	}
	if err != nil {
		if _, ok := host.AsError(err); !ok {
			// The CRM failed: nothing was booked, the claim is released.
			s.metrics.Effects.WithLabelValues(c.tool, "error").Inc()
			c.end(ctx, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the booking could not be saved; nothing was booked, please retry"}
		}
		if res == nil {
			s.metrics.Effects.WithLabelValues(c.tool, "error").Inc()
			return c.fail(ctx, err)
		}
		// The effect ran but the ledger could not record it: answer with
		// the booking all the same, and log why.
		c.end(ctx, "complete", err)
	} else {
		label := "run"
		if replay {
			label = "replay"
		}
		s.metrics.Effects.WithLabelValues(c.tool, label).Inc()
		c.end(ctx, "complete", nil)
	}
	var b crm.Booking
	if err := json.Unmarshal(res, &b); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	return bookResult(true, &b, fmt.Sprintf("Booked: a demo call for %s <%s> at %s (booking %s).", b.Name, b.Email, slotTitle(b.Slot), b.ID)), nil
}

func marshalBooking(b crm.Booking, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

func bookResult(booked bool, b *crm.Booking, msg string) *mcp.CallToolResult {
	sc := map[string]any{"booked": booked, "message": msg}
	if b != nil {
		sc["booking"] = b
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, StructuredContent: sc}
}

// slotSchema offers the next three weekdays at 15:00 UTC, as a titled enum,
// with a required confirmation.
func slotSchema(now time.Time) json.RawMessage {
	type option struct {
		Const string `json:"const"`
		Title string `json:"title"`
	}
	var opts []option
	d := now.UTC().Truncate(24 * time.Hour)
	for len(opts) < 3 {
		d = d.Add(24 * time.Hour)
		if d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
			continue
		}
		t := d.Add(15 * time.Hour)
		v := t.Format(time.RFC3339)
		opts = append(opts, option{v, slotTitle(v)})
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"slot":    map[string]any{"type": "string", "title": "Time slot", "oneOf": opts},
			"confirm": map[string]any{"type": "boolean", "title": "Book this slot", "description": "Tick to confirm the booking.", "default": false},
		},
		"required": []string{"slot", "confirm"},
	}
	b, _ := json.Marshal(schema)
	return b
}

func slotTitle(v string) string {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return v
	}
	return t.Format("Mon 2 Jan 2006, 15:04 UTC")
}

func (s *Server) listBookings(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	principal := PrincipalOf(r.Extra)
	start := time.Now()
	if len(r.Params.Arguments) > 0 && string(r.Params.Arguments) != "null" && string(r.Params.Arguments) != "{}" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r.Params.Arguments, &m); err != nil || len(m) > 0 {
			return nil, invalidParams("list_bookings takes no arguments")
		}
	}
	bs, err := s.cfg.CRM.ListBookings(ctx, principal)
	if err != nil {
		s.metrics.Outcomes.WithLabelValues("list_bookings", "error").Inc()
		s.log.LogAttrs(ctx, slog.LevelError, "tool call", slog.String("tool", "list_bookings"), slog.String("principal", principal), slog.String("outcome", "error"))
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the bookings could not be read"}
	}
	s.metrics.Outcomes.WithLabelValues("list_bookings", "complete").Inc()
	s.log.LogAttrs(ctx, slog.LevelInfo, "tool call", slog.String("tool", "list_bookings"), slog.String("principal", principal),
		slog.String("outcome", "complete"), slog.Int("count", len(bs)), slog.Duration("took", time.Since(start)))
	text := fmt.Sprintf("You have %d booking(s).", len(bs))
	for _, b := range bs {
		text += fmt.Sprintf("\n- %s: %s <%s>, %s, topic %q", b.ID, b.Name, b.Email, slotTitle(b.Slot), b.Topic)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: map[string]any{"bookings": bs},
	}, nil
}

// connectCalendar sends a URL-mode elicitation to this server's /connect
// page. The retry after accept completes when the page was submitted (by
// the same principal) and asks again while it was not.
func (s *Server) connectCalendar(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	req, err := HostRequest(r)
	if err != nil {
		return nil, invalidParams("malformed request")
	}
	c := s.begin("connect_calendar", req)
	if len(req.Arguments) > 0 && string(req.Arguments) != "null" && string(req.Arguments) != "{}" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(req.Arguments, &m); err != nil || len(m) > 0 {
			c.end(ctx, "rejected", nil)
			return nil, invalidParams("connect_calendar takes no arguments")
		}
	}
	if !req.IsRetry() {
		id, err := s.cfg.CRM.NewConnect(ctx, req.Principal, s.cfg.ConnectTTL)
		if err != nil {
			c.end(ctx, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "could not start the connection"}
		}
		return c.askConnect(ctx, id, "Open this page of the demo CRM to connect your calendar. You will enter the calendar's API key there; it goes to this server only, never through your assistant.")
	}
	out, err := c.resume(ctx)
	if err != nil {
		return c.fail(ctx, err)
	}
	switch out.Status {
	case host.InputRequired:
		return c.inputRequired(ctx, out.InputRequired)
	case host.Declined:
		c.end(ctx, "declined", nil)
		return Text("The calendar was not connected: you declined."), nil
	case host.Cancelled:
		c.end(ctx, "cancelled", nil)
		return Text("Connecting the calendar was cancelled. You can ask to connect it again at any time."), nil
	case host.Complete:
	default:
		return c.fail(ctx, &host.Error{Code: host.CodeInternal, Message: "unexpected outcome"})
	}
	// Accept in URL mode is consent only: look at what the page recorded.
	id := string(out.Progress)
	cs, err := s.cfg.CRM.Connect(ctx, id)
	gone := errors.Is(err, crm.ErrNotFound)
	switch {
	case err != nil && !gone:
		c.end(ctx, "error", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "could not read the connection"}
	case !gone && cs.Principal != req.Principal:
		// The state is bound to the principal, so this cannot happen unless
		// the store was edited: refuse.
		return c.fail(ctx, &host.Error{Code: host.CodeStateInvalid, Message: "invalid or expired requestState", Reason: "connect_principal"})
	case !gone && cs.Completed:
		c.end(ctx, "complete", nil)
		return Text("Your calendar is connected. The API key is stored on the server; it was never shown to the assistant."), nil
	case gone || time.Now().After(cs.ExpiresAt):
		// Expired (a session not found came from the sealed state, so it
		// existed and was deleted after it expired): a new link.
		id, err = s.cfg.CRM.NewConnect(ctx, req.Principal, s.cfg.ConnectTTL)
		if err != nil {
			c.end(ctx, "error", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "could not start the connection"}
		}
		return c.askConnect(ctx, id, "The previous link expired. Open this new page to connect your calendar.", host.WithPrevious(out))
	}
	// Asked again as the next round of the same request (WithPrevious), so every
	// turn counts against the round limit.
	return c.askConnect(ctx, id, "The page has not been submitted yet. Open it, enter the calendar's API key, submit, then continue.", host.WithPrevious(out))
}

func (c *call) askConnect(ctx context.Context, id, msg string, opts ...host.AskOption) (*mcp.CallToolResult, error) {
	url := strings.TrimRight(c.s.cfg.PublicURL, "/") + "/connect/" + id
	return c.ask(ctx, []host.InputRequest{host.URL(keyCalendar, msg, url)}, append(opts, host.WithProgress([]byte(id)))...)
}
