package redis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// TestOpenDeployments: every URL form opens the client go-redis's own
// parser describes, with our options taken out first.
func TestOpenDeployments(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sentinelPwFile := filepath.Join(dir, "spw")
	if err := os.WriteFile(sentinelPwFile, []byte("sentinel-secret\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		setting string
		check   func(t *testing.T, r *redisLedger)
	}{
		{"redis://127.0.0.1:6390/2?password_file=" + pwFile, func(t *testing.T, r *redisLedger) {
			o := r.c.(*goredis.Client).Options()
			if r.kind != kindSingle || o.Addr != "127.0.0.1:6390" || o.DB != 2 || o.Password != "s3cret-from-file" || o.TLSConfig != nil {
				t.Fatalf("%+v", o)
			}
			if !o.ContextTimeoutEnabled || o.MaxRetries != 1 || o.Protocol != 2 {
				t.Fatal("the fail-fast defaults are not set")
			}
		}},
		{"rediss://app:pw@cache.example:6380/0?wait_replicas=1&wait_timeout=50ms&prefix=p:", func(t *testing.T, r *redisLedger) {
			o := r.c.(*goredis.Client).Options()
			if o.Username != "app" || o.Password != "pw" || o.TLSConfig == nil || o.TLSConfig.ServerName != "cache.example" {
				t.Fatalf("%+v", o)
			}
			if r.waitN != 1 || r.waitTimeout != 50*time.Millisecond || r.prefix != "p:" {
				t.Fatalf("wait %d %v prefix %q", r.waitN, r.waitTimeout, r.prefix)
			}
		}},
		{"redis+cluster://app@10.0.0.1:7000?addr=10.0.0.2:7001&addr=10.0.0.3:7002&password_file=" + pwFile + "&wait_replicas=1", func(t *testing.T, r *redisLedger) {
			o := r.c.(*goredis.ClusterClient).Options()
			if r.kind != kindCluster || strings.Join(o.Addrs, ",") != "10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:7002" ||
				o.Username != "app" || o.Password != "s3cret-from-file" || o.TLSConfig != nil {
				t.Fatalf("%+v", o)
			}
			if !o.ContextTimeoutEnabled || o.MaxRetries != 1 || r.waitTimeout != defaultWaitTimeout {
				t.Fatal("the defaults are not set")
			}
		}},
		{"valkeys+cluster://10.0.0.1:7000", func(t *testing.T, r *redisLedger) {
			o := r.c.(*goredis.ClusterClient).Options()
			if r.kind != kindCluster || o.TLSConfig == nil {
				t.Fatalf("%+v", o)
			}
		}},
		{"redis+sentinel://:spw@10.0.0.1:26379/3?master_name=mymaster&addr=10.0.0.2:26379&password_file=" + pwFile, func(t *testing.T, r *redisLedger) {
			if r.kind != kindSentinel || r.master != "mymaster" || strings.Join(r.addrs, ",") != "10.0.0.1:26379,10.0.0.2:26379" {
				t.Fatalf("%+v", r.safe())
			}
			o := r.c.(*goredis.Client).Options()
			if o.Password != "s3cret-from-file" || o.DB != 3 {
				t.Fatalf("%+v", o)
			}
		}},
		{"rediss+sentinel://10.0.0.1:26379?master_name=m&sentinel_password_file=" + sentinelPwFile + "&username=app&password=pw", func(t *testing.T, r *redisLedger) {
			o := r.c.(*goredis.Client).Options()
			if r.kind != kindSentinel || o.Username != "app" || o.Password != "pw" || o.TLSConfig == nil {
				t.Fatalf("%+v", o)
			}
		}},
	} {
		t.Run(strings.SplitN(c.setting, "?", 2)[0], func(t *testing.T) {
			l, err := ledger.Open(ctx, c.setting)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			c.check(t, l.(*redisLedger))
		})
	}
}

// TestOpenRefuses: bad settings fail with a clear error that never
// repeats a password, whether from the URL or from a file.
func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ setting, want string }{
		{"redis://:hunter2@h:6379/0?password_file=" + pwFile, "both set the password"},
		{"redis://h:6379/0?password_file=" + filepath.Join(dir, "missing"), "password_file: cannot open it"},
		{"redis://h:6379/0?password_file=" + empty, "password_file: the file is empty"},
		{"redis://h:6379/0?password_file=", "password_file wants one path"},
		{"redis://h:6379/0?sentinel_password_file=" + pwFile, "for redis+sentinel:// only"},
		{"redis+sentinel://:hunter2@h:26379", "needs ?master_name="},
		{"redis+sentinel://h:26379?master_name=m&password=hunter2&password_file=" + pwFile, "both set the master's password"},
		{"redis://h:6379/0?wait_replicas=x", "wait_replicas wants"},
		{"redis://h:6379/0?wait_replicas=17", "wait_replicas wants"},
		{"redis://h:6379/0?wait_timeout=10ms", "wait_timeout needs wait_replicas"},
		{"redis://h:6379/0?wait_replicas=1&wait_timeout=0", "wait_timeout wants"},
		{"redis+cluster://:hunter2@h:7000?bogus=1", "cluster URL is not valid"},
		{"redis+cluster://:hunter2@h:7000?addr=nonsense", "cluster URL is not valid"},
		{"redis+sentinel://:hunter2@h:26379?master_name=m&bogus=hunter2", "sentinel URL is not valid"},
		{"redis+cluster://:hunter2@%zz:7000", "does not parse"},
		{"redis://:hunter2@h:6379/0?tls_ca_file=" + pwFile, "needs a TLS scheme"},
		{"rediss://:hunter2@h:6379/0?tls_ca_file=" + pwFile, "holds no PEM certificate"},
	} {
		_, err := ledger.Open(ctx, c.setting)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%q: %v, want %q", c.setting, err, c.want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Fatalf("%q: the error shows the password: %v", c.setting, err)
		}
	}
}

// TestLedgerRedacted: the ledger prints, logs and marshals its
// deployment, never a password from the URL or a file.
func TestLedgerRedacted(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("from-file-hunter3"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"redis://user:hunter2@127.0.0.1:6390/0?wait_replicas=1",
		"redis+cluster://user:hunter2@127.0.0.1:7000?addr=127.0.0.1:7001",
		"redis+sentinel://:hunter2@127.0.0.1:26379?master_name=m&password_file=" + pwFile,
		"rediss://127.0.0.1:6390/0?password_file=" + pwFile,
	} {
		l, err := ledger.Open(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			fmt.Fprintf(&out, verb+"\n", l)
		}
		slog.New(slog.NewJSONHandler(&out, nil)).Info("x", "ledger", l)
		slog.New(slog.NewTextHandler(&out, nil)).Info("x", "ledger", l)
		j, _ := json.Marshal(l)
		out.Write(j)
		if strings.Contains(out.String(), "hunter") {
			t.Fatalf("%s:\n%s", s, out.String())
		}
		if !strings.Contains(out.String(), "127.0.0.1:") {
			t.Fatalf("the address is not shown:\n%s", out.String())
		}
		l.Close()
	}
}
