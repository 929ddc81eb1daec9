package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testRedisURL is the Redis the tests need: Debian's redis-server on the
// development and CI machines. MRTR_TEST_REDIS overrides it.
func testRedisURL() string {
	if u := os.Getenv("MRTR_TEST_REDIS"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// openTestRedis opens the Redis ledger under a prefix of its own and
// deletes the prefix's keys afterwards. It fails, never skips, when Redis
// does not answer.
func openTestRedis(t testing.TB, opts ...Option) Ledger {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "mrtr-test:" + hex.EncodeToString(b[:]) + ":"
	l, err := Open(context.Background(), testRedisURL(), append([]Option{WithPrefix(prefix)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.Ping(ctx); err != nil {
		t.Fatalf("Redis at %s does not answer (%v): these tests need a real Redis; start it with `service redis-server start` or `redis-server --daemonize yes`", testRedisURL(), err)
	}
	t.Cleanup(func() {
		cleanRedisPrefix(t, prefix)
		_ = l.Close()
	})
	return l
}

func cleanRedisPrefix(t testing.TB, prefix string) {
	o, err := redis.ParseURL(testRedisURL())
	if err != nil {
		t.Error(err)
		return
	}
	c := redis.NewClient(o)
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

func openTestSQLite(t testing.TB, path string) Ledger {
	t.Helper()
	l, err := Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}
