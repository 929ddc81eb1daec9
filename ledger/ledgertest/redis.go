package ledgertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// OpenRedis opens the Redis ledger (the caller links ledger/redis) at
// testenv.RedisURL under a key prefix of its own, and deletes the
// prefix's keys afterwards. Without Redis it skips t (fails it under
// MRTR_REQUIRE_SERVICES=1).
func OpenRedis(t testing.TB, opts ...ledger.Option) ledger.Ledger {
	t.Helper()
	testenv.Require(t, testenv.Redis)
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "mrtr-test:" + hex.EncodeToString(b[:]) + ":"
	l, err := ledger.Open(context.Background(), testenv.RedisURL(), append([]ledger.Option{ledger.WithPrefix(prefix)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.Ping(ctx); err != nil {
		t.Fatalf("Redis at %s accepts connections but does not answer PING: %v", testenv.RedisURL(), err)
	}
	t.Cleanup(func() {
		cleanRedisPrefix(t, prefix)
		_ = l.Close()
	})
	return l
}

func cleanRedisPrefix(t testing.TB, prefix string) {
	o, err := goredis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Error(err)
		return
	}
	c := goredis.NewClient(o)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("cleaning %s*: %v", prefix, err)
		return
	}
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := c.Del(ctx, keys[:n]...).Err(); err != nil {
			t.Errorf("cleaning %s*: %v", prefix, err)
			return
		}
		keys = keys[n:]
	}
}
