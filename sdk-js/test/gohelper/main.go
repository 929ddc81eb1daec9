package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/redis"
	_ "github.com/mrtr-wasm/mrtr-wasm/ledger/sqlite"
	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

type input struct {
	Keys     string `json:"keys"`
	Audience string `json:"audience"`
	// Ledger is a ledger.Open setting for Guard.Once ("redis://…").
	Ledger string `json:"ledger,omitempty"`
	// Policy is a data file for the shipped policies (host.WithPolicy).
	Policy string `json:"policy,omitempty"`
	Ops    []op   `json:"ops"`
}

type op struct {
	Op      string          `json:"op"`
	Request *request        `json:"request,omitempty"`
	Inputs  []inputRequest  `json:"inputs,omitempty"`
	Redis   string          `json:"redis,omitempty"`
	ID      string          `json:"id,omitempty"`
	FP      string          `json:"fp,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

type request struct {
	Principal      string          `json:"principal"`
	Method         string          `json:"method"`
	Target         string          `json:"target"`
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	Capabilities   json.RawMessage `json:"capabilities,omitempty"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	RequestState   string          `json:"requestState,omitempty"`
}

type inputRequest struct {
	Key    string          `json:"key"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type result struct {
	Result  any        `json:"result,omitempty"`
	Replay  bool       `json:"replay,omitempty"`
	Outcome *outcome   `json:"outcome,omitempty"`
	Entry   *entry     `json:"entry,omitempty"`
	Status  string     `json:"status,omitempty"`
	Error   *errorJSON `json:"error,omitempty"`
}

type outcome struct {
	Status        host.Status                `json:"status"`
	OperationID   string                     `json:"operationId"`
	Round         int                        `json:"round"`
	Answers       map[string]json.RawMessage `json:"answers,omitempty"`
	Declined      []string                   `json:"declined,omitempty"`
	Cancelled     []string                   `json:"cancelled,omitempty"`
	InputRequired *host.InputRequiredResult  `json:"inputRequired,omitempty"`
}

type entry struct {
	State       string `json:"state"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Result      string `json:"result,omitempty"`
}

type errorJSON struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Reason  string          `json:"reason,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gohelper:", err)
		os.Exit(1)
	}
}

func run() error {
	var in input
	if err := json.NewDecoder(os.Stdin).Decode(&in); err != nil {
		return err
	}
	ctx := context.Background()
	var g *host.Guard
	if in.Keys != "" {
		keys, err := host.ParseKeys(in.Keys)
		if err != nil {
			return err
		}
		opts := []host.Option{host.WithKeys(keys), host.WithAudience(in.Audience)}
		if in.Ledger != "" {
			l, err := ledger.Open(ctx, in.Ledger)
			if err != nil {
				return err
			}
			defer l.Close()
			opts = append(opts, host.WithLedger(l))
		}
		if in.Policy != "" {
			p, err := policy.Default(ctx, policy.WithDataFile(in.Policy))
			if err != nil {
				return err
			}
			opts = append(opts, host.WithPolicy(p))
		}
		if dir := os.Getenv("MRTR_GOHELPER_CACHE"); dir != "" {
			// Compiling guard.wasm takes seconds; the tests run the helper
			// several times.
			opts = append(opts, host.WithCompilationCache(dir))
		}
		if g, err = host.New(ctx, opts...); err != nil {
			return err
		}
		defer g.Close(ctx)
	}
	out := make([]result, 0, len(in.Ops))
	for _, o := range in.Ops {
		out = append(out, do(ctx, g, o))
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func do(ctx context.Context, g *host.Guard, o op) result {
	switch o.Op {
	case "ask", "resume", "once":
		if g == nil || o.Request == nil {
			return fail(errors.New("ask and resume need keys and a request"))
		}
		req := &host.Request{Principal: o.Request.Principal, Method: o.Request.Method, Target: o.Request.Target,
			Arguments: o.Request.Arguments, Capabilities: o.Request.Capabilities,
			InputResponses: o.Request.InputResponses, RequestState: o.Request.RequestState}
		if o.Op == "ask" {
			inputs := make([]host.InputRequest, len(o.Inputs))
			for i, r := range o.Inputs {
				inputs[i] = host.InputRequest{Key: r.Key, Method: r.Method, Params: r.Params}
			}
			res, err := g.Ask(ctx, req, inputs)
			if err != nil {
				return fail(err)
			}
			return result{Result: res}
		}
		res, err := g.Resume(ctx, req)
		if err != nil {
			return fail(err)
		}
		if o.Op == "once" {
			// The effect "returns" the given result bytes.
			out, replay, err := g.Once(ctx, res, func(context.Context) ([]byte, error) { return o.Result, nil })
			if err != nil {
				return fail(err)
			}
			return result{Result: string(out), Replay: replay}
		}
		return result{Outcome: &outcome{Status: res.Status, OperationID: res.OperationID, Round: res.Round,
			Answers: res.Answers, Declined: res.Declined, Cancelled: res.Cancelled, InputRequired: res.InputRequired}}
	case "ledger.claimFinish", "ledger.get":
		l, err := ledger.Open(ctx, o.Redis)
		if err != nil {
			return fail(err)
		}
		defer l.Close()
		if o.Op == "ledger.get" {
			e, err := l.Get(ctx, o.ID)
			if err != nil {
				return fail(err)
			}
			en := &entry{State: [...]string{"absent", "pending", "done"}[e.State]}
			if e.State != ledger.Absent {
				en.Fingerprint = hex.EncodeToString(e.Fingerprint[:])
				en.Result = string(e.Result)
			}
			return result{Entry: en}
		}
		var fp ledger.Fingerprint
		if _, err := hex.Decode(fp[:], []byte(o.FP)); err != nil {
			return fail(err)
		}
		c, err := l.Claim(ctx, o.ID, fp, 30*time.Second)
		if err != nil {
			return fail(err)
		}
		if c.Status == ledger.Acquired {
			if err := l.Finish(ctx, o.ID, c.Token, fp, o.Result, 5*time.Minute); err != nil {
				return fail(err)
			}
		}
		return result{Status: c.Status.String(), Result: string(c.Result)}
	}
	return fail(fmt.Errorf("unknown op %q", o.Op))
}

func fail(err error) result {
	if e, ok := host.AsError(err); ok {
		return result{Error: &errorJSON{Code: e.Code, Message: e.Message, Reason: e.Reason, Data: e.Data}}
	}
	return result{Error: &errorJSON{Code: "gohelper", Message: err.Error()}}
}
