package redis

import (
	"context"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

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
// stale owner never overwrites another claim or result.
type redisLedger struct {
	c      goredis.UniversalClient
	prefix string
	owned  bool
}

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
	}, "redis", "rediss")
}

// New keeps the ledger in the Redis that c talks to. c stays the
// caller's: Close does not close it.
func New(c goredis.UniversalClient, opts ...ledger.Option) ledger.Ledger {
	return &redisLedger{c: c, prefix: ledger.ApplyOptions(opts...).Prefix}
}

func openURL(setting string, o ledger.Options) (ledger.Ledger, error) {
	u, err := url.Parse(setting)
	if err != nil {
		// url errors repeat the URL, and with it any password.
		return nil, errors.New("ledger: the redis URL does not parse (not shown: it may hold a password)")
	}
	q := u.Query()
	if p, ok := q["prefix"]; ok {
		o.Prefix = p[0]
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	ro, err := goredis.ParseURL(u.String())
	if err != nil {
		return nil, errors.New("ledger: the redis URL is not valid for go-redis (not shown: it may hold a password)")
	}
	// Bounded waits: the guard gives each ledger call its own deadline,
	// and the client must honour it rather than its own 3 s read timeout.
	ro.ContextTimeoutEnabled = true
	if ro.DialTimeout == 0 {
		ro.DialTimeout = time.Second
	}
	if ro.ReadTimeout == 0 {
		ro.ReadTimeout = time.Second
	}
	if ro.WriteTimeout == 0 {
		ro.WriteTimeout = time.Second
	}
	// Fail closed fast: one dial retry and one command retry (a pooled
	// connection that died with a Redis restart), not go-redis's 5 and 3.
	if ro.DialerRetries == 0 {
		ro.DialerRetries = 1
		ro.DialerRetryTimeout = 20 * time.Millisecond
	}
	if !q.Has("max_retries") {
		ro.MaxRetries = 1
	}
	if !q.Has("protocol") {
		// RESP2 works on every server Debian ships and skips the HELLO
		// round trip on connect.
		ro.Protocol = 2
	}
	ro.DisableIdentity = true
	return &redisLedger{c: goredis.NewClient(ro), prefix: o.Prefix, owned: true}, nil
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
		err := r.c.Do(ctx, "SET", k, string(statePen)+token+fph, "NX", "PX", opcheck.Ms(lease)).Err()
		if err == nil {
			return ledger.Claim{Status: ledger.Acquired, Token: token}, nil
		}
		if !errors.Is(err, goredis.Nil) {
			return ledger.Claim{}, err
		}
		v, err := r.c.Get(ctx, k).Bytes()
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
			// Our own SET, retried by the client after a lost reply.
			return ledger.Claim{Status: ledger.Acquired, Token: token}, nil
		}
		return ledger.Claim{Status: ledger.InProgress}, nil
	}
}

func (r *redisLedger) Finish(ctx context.Context, op, token string, fp ledger.Fingerprint, result []byte, ttl time.Duration) error {
	if err := opcheck.Finish(ctx, op, token); err != nil {
		return err
	}
	n, err := finishScript.Run(ctx, r.c, []string{r.key(op)}, token, hexFP(fp), result, strconv.FormatInt(opcheck.Ms(ttl), 10)).Int()
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
	return releaseScript.Run(ctx, r.c, []string{r.key(op)}, token).Err()
}

func (r *redisLedger) Get(ctx context.Context, op string) (ledger.Entry, error) {
	if err := opcheck.Op(op); err != nil {
		return ledger.Entry{}, err
	}
	v, err := r.c.Get(ctx, r.key(op)).Bytes()
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
	if _, err := hexDecode(e.Fingerprint[:], v[1+opcheck.TokenLen:hdrLen]); err != nil {
		return ledger.Entry{}, errors.New("ledger: redis: malformed entry")
	}
	if v[0] == stateDon {
		e.State, e.Result = ledger.Done, opcheck.Clone(v[hdrLen:])
	}
	return e, nil
}

func (r *redisLedger) Ping(ctx context.Context) error { return r.c.Ping(ctx).Err() }

func (r *redisLedger) Close() error {
	if r.owned {
		return r.c.Close()
	}
	return nil
}

func hexFP(fp ledger.Fingerprint) string { return hex.EncodeToString(fp[:]) }

func hexDecode(dst, src []byte) (int, error) { return hex.Decode(dst, src) }
