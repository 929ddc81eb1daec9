package redis

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mrtr-wasm/mrtr-wasm/internal/redact"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/opcheck"
)

// redisLedger keeps one string key per operation:
//
//	prefix+op = state (1 byte: 'p' pending, 'd' done) + token (32 hex)
//	            + fingerprint (64 hex) + result (done only)
//
// A claim is SET NX PX lease: the key expires by itself when its owner
// dies. Finish and Release are Lua scripts that check the token, so a
// stale owner never overwrites another claim or result. Every command
// and script touches that one key, so in a Redis Cluster each lives in
// one hash slot, and the layout is the same as on a single node (and as
// sdk-js's RedisLedger writes it).
//
// With waitN > 0 a claim and a result are each sent together with
// WAIT waitN timeout on one connection to the key's master, and count
// only when enough replicas acknowledged them.
type redisLedger struct {
	c      goredis.UniversalClient
	prefix string
	owned  bool

	kind        string   // kindSingle, kindCluster or kindSentinel
	addrs       []string // the node, seeds or sentinels (host:port only)
	master      string   // Sentinel's master name
	waitN       int
	waitTimeout time.Duration
}

// ErrNotReplicated: fewer replicas than asked acknowledged a claim or a
// result before the WAIT timeout. Nothing ran (a claim) or the result
// may be lost on failover (Finish); the caller fails closed and retries.
var ErrNotReplicated = errors.New("ledger: redis: too few replicas acknowledged the write in time")

const (
	hdrLen   = 1 + opcheck.TokenLen + 2*len(ledger.Fingerprint{})
	statePen = 'p'
	stateDon = 'd'
)

// finishScript: KEYS[1] op key; ARGV: token, fingerprint hex, result, ttl ms.
var finishScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 2, 33) ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[1], 'd' .. ARGV[1] .. ARGV[2] .. ARGV[3], 'PX', ARGV[4])
return 1`)

// releaseScript: KEYS[1] op key; ARGV: token.
var releaseScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == 'p' and string.sub(v, 2, 33) == ARGV[1] then
	redis.call('DEL', KEYS[1])
	return 1
end
return 0`)

func init() {
	ledger.Register(func(_ context.Context, setting string, o ledger.Options) (ledger.Ledger, error) {
		return openURL(setting, o)
	}, schemeNames()...)
}

// New keeps the ledger in the Redis that c talks to (a *goredis.Client,
// for one node or a Sentinel-managed master, or a *goredis.ClusterClient). c stays the caller's: Close does
// not close it. ledger.WithReplicaAck makes claims and results wait for
// replicas.
func New(c goredis.UniversalClient, opts ...ledger.Option) ledger.Ledger {
	o := ledger.ApplyOptions(opts...)
	r := &redisLedger{c: c, prefix: o.Prefix, kind: "client", waitN: max(o.WaitReplicas, 0), waitTimeout: o.WaitTimeout}
	if r.waitN > 0 && r.waitTimeout <= 0 {
		r.waitTimeout = defaultWaitTimeout
	}
	return r
}

func (r *redisLedger) key(op string) string { return r.prefix + op }

func (r *redisLedger) Claim(ctx context.Context, op string, fp ledger.Fingerprint, lease time.Duration) (ledger.Claim, error) {
	if err := opcheck.Op(op); err != nil {
		return ledger.Claim{}, err
	}
	if err := ctx.Err(); err != nil {
		return ledger.Claim{}, err
	}
	token := opcheck.NewToken()
	fph := hexFP(fp)
	k := r.key(op)
	for attempt := 0; ; attempt++ {
		err := r.write(ctx, k, func(c commander) goredis.Cmder {
			return c.Do(ctx, "SET", k, string(statePen)+token+fph, "NX", "PX", opcheck.Ms(lease))
		})
		if err == nil {
			return ledger.Claim{Status: ledger.Acquired, Token: token}, nil
		}
		if errors.Is(err, ErrNotReplicated) {
			r.releaseUnacked(ctx, op, token)
			return ledger.Claim{}, err
		}
		if !errors.Is(err, goredis.Nil) {
			return ledger.Claim{}, err
		}
		v, err := r.c.Get(ctx, k).Bytes()
		r.stale(err)
		if errors.Is(err, goredis.Nil) {
			// Released or expired in between: try again.
			if attempt < 3 {
				continue
			}
			return ledger.Claim{Status: ledger.InProgress}, nil
		}
		if err != nil {
			return ledger.Claim{}, err
		}
		if len(v) < hdrLen {
			return ledger.Claim{}, errors.New("ledger: redis: malformed entry")
		}
		switch {
		case string(v[1+opcheck.TokenLen:hdrLen]) != fph:
			return ledger.Claim{Status: ledger.Conflict}, nil
		case v[0] == stateDon:
			return ledger.Claim{Status: ledger.Finished, Result: opcheck.Clone(v[hdrLen:])}, nil
		case string(v[1:1+opcheck.TokenLen]) == token:
			// Our own SET, retried by the client after a lost reply. The
			// WAIT that went with the retry covered nothing: a write on
			// this connection orders after the SET, and its WAIT does.
			if r.waitN > 0 {
				err := r.write(ctx, k, func(c commander) goredis.Cmder {
					return c.Do(ctx, "PEXPIRE", k, opcheck.Ms(lease))
				})
				if err != nil {
					r.releaseUnacked(ctx, op, token)
					return ledger.Claim{}, err
				}
			}
			return ledger.Claim{Status: ledger.Acquired, Token: token}, nil
		}
		return ledger.Claim{Status: ledger.InProgress}, nil
	}
}

func (r *redisLedger) Finish(ctx context.Context, op, token string, fp ledger.Fingerprint, result []byte, ttl time.Duration) error {
	if err := opcheck.Finish(ctx, op, token); err != nil {
		return err
	}
	n, err := r.runScript(ctx, finishScript, r.key(op), token, hexFP(fp), result, strconv.FormatInt(opcheck.Ms(ttl), 10))
	if err != nil {
		return err
	}
	if n != 1 {
		return ledger.ErrLost
	}
	return nil
}

func (r *redisLedger) Release(ctx context.Context, op, token string) error {
	if err := opcheck.Op(op); err != nil {
		return err
	}
	return r.stale(releaseScript.Run(ctx, r.c, []string{r.key(op)}, token).Err())
}

func (r *redisLedger) Get(ctx context.Context, op string) (ledger.Entry, error) {
	if err := opcheck.Op(op); err != nil {
		return ledger.Entry{}, err
	}
	v, err := r.c.Get(ctx, r.key(op)).Bytes()
	r.stale(err)
	if errors.Is(err, goredis.Nil) {
		return ledger.Entry{}, nil
	}
	if err != nil {
		return ledger.Entry{}, err
	}
	if len(v) < hdrLen {
		return ledger.Entry{}, errors.New("ledger: redis: malformed entry")
	}
	e := ledger.Entry{State: ledger.Pending}
	if _, err := hex.Decode(e.Fingerprint[:], v[1+opcheck.TokenLen:hdrLen]); err != nil {
		return ledger.Entry{}, errors.New("ledger: redis: malformed entry")
	}
	if v[0] == stateDon {
		e.State, e.Result = ledger.Done, opcheck.Clone(v[hdrLen:])
	}
	return e, nil
}

func (r *redisLedger) Ping(ctx context.Context) error { return r.stale(r.c.Ping(ctx).Err()) }

func (r *redisLedger) Close() error {
	if r.owned {
		return r.c.Close()
	}
	return nil
}

// write runs the command that do sends through c, and with waitN > 0
// a WAIT after it on the same connection to the master that holds key
// (WAIT counts the writes of its own connection). It returns the
// command's error, else ErrNotReplicated when too few replicas
// acknowledged.
func (r *redisLedger) write(ctx context.Context, key string, do func(c commander) goredis.Cmder) error {
	if r.waitN == 0 {
		return r.stale(do(r.c).Err())
	}
	var node interface {
		Pipelined(context.Context, func(goredis.Pipeliner) error) ([]goredis.Cmder, error)
	} = r.c
	if cc, ok := r.c.(*goredis.ClusterClient); ok {
		// A cluster client would send the keyless WAIT to any node.
		n, err := cc.MasterForKey(ctx, key)
		if err != nil {
			return r.stale(err)
		}
		node = n
	}
	var cmd goredis.Cmder
	wait := goredis.NewIntCmd(ctx, "WAIT", r.waitN, opcheck.Ms(r.waitTimeout))
	_, _ = node.Pipelined(ctx, func(p goredis.Pipeliner) error {
		cmd = do(p)
		_ = p.Process(ctx, wait)
		return nil
	})
	if err := cmd.Err(); err != nil {
		return r.stale(err)
	}
	if err := wait.Err(); err != nil {
		return r.stale(err)
	}
	if wait.Val() < int64(r.waitN) {
		return ErrNotReplicated
	}
	return nil
}

// commander is what a client and a pipeline both offer.
type commander interface {
	goredis.Scripter
	Do(ctx context.Context, args ...any) *goredis.Cmd
}

// stale passes err on. A cluster client learns a new slot map from a
// MOVED reply or once a minute, not from a master that stopped
// answering: after any error but a missing key, ask it to reload now
// (go-redis coalesces the reloads), so that calls after a failover find
// the promoted replica instead of failing until the minute is over.
func (r *redisLedger) stale(err error) error {
	if err != nil && !errors.Is(err, goredis.Nil) {
		if cc, ok := r.c.(*goredis.ClusterClient); ok {
			cc.ReloadState(context.Background())
		}
	}
	return err
}

// runScript runs s through write: EVALSHA, and EVAL when the server does
// not have it cached yet.
func (r *redisLedger) runScript(ctx context.Context, s *goredis.Script, key string, args ...any) (int64, error) {
	var cmd *goredis.Cmd
	keys := []string{key}
	err := r.write(ctx, key, func(c commander) goredis.Cmder {
		cmd = s.EvalSha(ctx, c, keys, args...)
		return cmd
	})
	if err != nil && goredis.HasErrorPrefix(err, "NOSCRIPT") {
		err = r.write(ctx, key, func(c commander) goredis.Cmder {
			cmd = s.Eval(ctx, c, keys, args...)
			return cmd
		})
	}
	if err != nil {
		return 0, err
	}
	return cmd.Int64()
}

// releaseUnacked drops a claim no replica confirmed, so that a retry
// need not wait for its lease. Best effort: the claim expires anyway.
func (r *redisLedger) releaseUnacked(ctx context.Context, op, token string) {
	_ = r.Release(context.WithoutCancel(ctx), op, token)
}

func hexFP(fp ledger.Fingerprint) string { return hex.EncodeToString(fp[:]) }

// The ledger holds a client whose options may hold passwords: it prints
// (fmt, every verb), logs (slog) and marshals only its deployment, its
// addresses, its prefix and its WAIT setting.
func (r *redisLedger) safe() []slog.Attr {
	a := []slog.Attr{slog.String("kind", r.kind), slog.String("addrs", strings.Join(r.addrs, ","))}
	if r.master != "" {
		a = append(a, slog.String("master", r.master))
	}
	a = append(a, slog.String("prefix", r.prefix))
	if r.waitN > 0 {
		a = append(a, slog.Int("waitReplicas", r.waitN), slog.Duration("waitTimeout", r.waitTimeout))
	}
	return a
}

// String names the deployment without credentials.
func (r *redisLedger) String() string { return redact.String("redis.Ledger", r.safe()) }

// GoString is String.
func (r *redisLedger) GoString() string { return r.String() }

// Format prints String for every verb.
func (r *redisLedger) Format(f fmt.State, _ rune) { redact.Format(f, r.String()) }

// LogValue logs the safe fields.
func (r *redisLedger) LogValue() slog.Value { return slog.GroupValue(r.safe()...) }

// MarshalJSON is String as a JSON string.
func (r *redisLedger) MarshalJSON() ([]byte, error) { return redact.JSON(r.String()) }
