package redis

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
)

// The deployments a setting can name.
const (
	kindSingle   = "redis"
	kindCluster  = "cluster"
	kindSentinel = "sentinel"
)

// schemes maps each accepted scheme to its deployment and to the scheme
// go-redis's own parsers take (TLS or not). Valkey speaks the same
// protocol: its schemes are aliases.
var schemes = func() map[string]struct{ kind, base string } {
	m := map[string]struct{ kind, base string }{}
	for _, brand := range []string{"redis", "valkey"} {
		for suffix, kind := range map[string]string{"": kindSingle, "+cluster": kindCluster, "+sentinel": kindSentinel} {
			m[brand+suffix] = struct{ kind, base string }{kind, "redis"}
			m[brand+"s"+suffix] = struct{ kind, base string }{kind, "rediss"}
		}
	}
	return m
}()

func schemeNames() []string {
	names := make([]string, 0, len(schemes))
	for s := range schemes {
		names = append(names, s)
	}
	return names
}

// Bounds of the options this package reads itself.
const (
	maxWaitReplicas    = 16
	defaultWaitTimeout = 100 * time.Millisecond
	maxSecretFile      = 4 << 10
)

// errNoParse never repeats the setting: it may hold a password.
var errNoParse = errors.New("ledger: the redis URL does not parse (not shown: it may hold a password)")

// openURL parses a setting with go-redis's own parsers (ParseURL,
// ParseClusterURL, ParseFailoverURL) after taking out the options that
// are ours: prefix, password_file, sentinel_password_file, tls_ca_file,
// wait_replicas and wait_timeout.
func openURL(setting string, o ledger.Options) (ledger.Ledger, error) {
	u, err := url.Parse(setting)
	if err != nil {
		return nil, errNoParse
	}
	sc, ok := schemes[u.Scheme] // url.Parse lowercases it
	if !ok {
		return nil, fmt.Errorf("ledger: redis: unknown scheme %q", u.Scheme)
	}
	u.Scheme = sc.base
	q := u.Query()
	if p, ok := q["prefix"]; ok {
		o.Prefix = p[0]
		q.Del("prefix")
	}
	if err := waitOptions(q, &o); err != nil {
		return nil, err
	}
	password, err := secretFile(q, "password_file")
	if err != nil {
		return nil, err
	}
	sentinelPassword, err := secretFile(q, "sentinel_password_file")
	if err != nil {
		return nil, err
	}
	if sentinelPassword != "" && sc.kind != kindSentinel {
		return nil, errors.New("ledger: redis: sentinel_password_file is for redis+sentinel:// only")
	}
	roots, err := caFile(q, sc.base == "rediss")
	if err != nil {
		return nil, err
	}
	_, hasQueryPassword := q["password"]
	u.RawQuery = q.Encode()

	r := &redisLedger{prefix: o.Prefix, owned: true, kind: sc.kind, waitN: o.WaitReplicas, waitTimeout: o.WaitTimeout}
	var k knobs
	switch sc.kind {
	case kindSingle:
		ro, err := goredis.ParseURL(u.String())
		if err != nil {
			return nil, invalid(sc.kind)
		}
		if err := setPassword(&ro.Password, password, "the URL"); err != nil {
			return nil, err
		}
		k = knobs{&ro.ContextTimeoutEnabled, &ro.DialTimeout, &ro.ReadTimeout, &ro.WriteTimeout, &ro.DialerRetries, &ro.DialerRetryTimeout, &ro.MaxRetries, &ro.Protocol, &ro.DisableIdentity}
		k.tune(q)
		trust(ro.TLSConfig, roots)
		r.addrs = []string{ro.Addr}
		r.c = goredis.NewClient(ro)
	case kindCluster:
		co, err := goredis.ParseClusterURL(u.String())
		if err != nil {
			return nil, invalid(sc.kind)
		}
		if err := setPassword(&co.Password, password, "the URL"); err != nil {
			return nil, err
		}
		k = knobs{&co.ContextTimeoutEnabled, &co.DialTimeout, &co.ReadTimeout, &co.WriteTimeout, &co.DialerRetries, &co.DialerRetryTimeout, &co.MaxRetries, &co.Protocol, &co.DisableIdentity}
		k.tune(q)
		trust(co.TLSConfig, roots)
		r.addrs = co.Addrs
		r.c = goredis.NewClusterClient(co)
	case kindSentinel:
		fo, err := goredis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, invalid(sc.kind)
		}
		if fo.MasterName == "" {
			return nil, errors.New("ledger: redis+sentinel:// needs ?master_name=")
		}
		// go-redis: user:password@ in the URL logs into the sentinels;
		// ?username=&password= into the master and replicas.
		if password != "" && hasQueryPassword {
			return nil, errors.New("ledger: redis: password_file and ?password= both set the master's password")
		}
		if password != "" {
			fo.Password = password
		}
		if err := setPassword(&fo.SentinelPassword, sentinelPassword, "the URL"); err != nil {
			return nil, err
		}
		k = knobs{&fo.ContextTimeoutEnabled, &fo.DialTimeout, &fo.ReadTimeout, &fo.WriteTimeout, &fo.DialerRetries, &fo.DialerRetryTimeout, &fo.MaxRetries, &fo.Protocol, &fo.DisableIdentity}
		k.tune(q)
		trust(fo.TLSConfig, roots)
		r.addrs, r.master = fo.SentinelAddrs, fo.MasterName
		r.c = goredis.NewFailoverClient(fo)
	}
	return r, nil
}

func invalid(kind string) error {
	return fmt.Errorf("ledger: the %s URL is not valid for go-redis (not shown: it may hold a password)", kind)
}

// setPassword sets *dst from a password file, unless the URL set it too.
func setPassword(dst *string, fromFile, where string) error {
	if fromFile == "" {
		return nil
	}
	if *dst != "" {
		return fmt.Errorf("ledger: redis: a password file and %s both set the password", where)
	}
	*dst = fromFile
	return nil
}

// secretFile reads the password a query option names (and removes the
// option): the file's first line. Errors name the option, never the
// content.
func secretFile(q url.Values, name string) (string, error) {
	v, ok := q[name]
	if !ok {
		return "", nil
	}
	q.Del(name)
	if len(v) != 1 || v[0] == "" {
		return "", fmt.Errorf("ledger: redis: %s wants one path", name)
	}
	f, err := os.Open(v[0])
	if err != nil {
		return "", fmt.Errorf("ledger: redis: %s: cannot open it: %w", name, errors.Unwrap(err))
	}
	defer f.Close()
	b := make([]byte, maxSecretFile+1)
	n, _ := f.Read(b)
	if n > maxSecretFile {
		return "", fmt.Errorf("ledger: redis: %s: over %d bytes", name, maxSecretFile)
	}
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("ledger: redis: %s: the file is empty", name)
	}
	return line, nil
}

// caFile reads the PEM certificates tls_ca_file names (and removes the
// option): the authorities a rediss:// server's certificate must chain
// to, instead of the system's.
func caFile(q url.Values, isTLS bool) (*x509.CertPool, error) {
	v, ok := q["tls_ca_file"]
	if !ok {
		return nil, nil
	}
	q.Del("tls_ca_file")
	if !isTLS {
		return nil, errors.New("ledger: redis: tls_ca_file needs a TLS scheme (rediss://, rediss+cluster://, rediss+sentinel://)")
	}
	if len(v) != 1 || v[0] == "" {
		return nil, errors.New("ledger: redis: tls_ca_file wants one path")
	}
	pem, err := os.ReadFile(v[0])
	if err != nil {
		return nil, fmt.Errorf("ledger: redis: tls_ca_file: cannot read it: %w", errors.Unwrap(err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("ledger: redis: tls_ca_file holds no PEM certificate")
	}
	return pool, nil
}

func trust(c *tls.Config, roots *x509.CertPool) {
	if c != nil && roots != nil {
		c.RootCAs = roots
	}
}

// waitOptions reads wait_replicas and wait_timeout into o (and removes
// them).
func waitOptions(q url.Values, o *ledger.Options) error {
	if v, ok := q["wait_replicas"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 0 || n > maxWaitReplicas {
			return fmt.Errorf("ledger: redis: wait_replicas wants 0 to %d", maxWaitReplicas)
		}
		o.WaitReplicas = n
		q.Del("wait_replicas")
	}
	if v, ok := q["wait_timeout"]; ok {
		d, err := time.ParseDuration(v[0])
		if err != nil || d < time.Millisecond {
			return errors.New("ledger: redis: wait_timeout wants a duration of at least 1ms, such as 100ms")
		}
		if o.WaitReplicas == 0 {
			return errors.New("ledger: redis: wait_timeout needs wait_replicas")
		}
		o.WaitTimeout = d
		q.Del("wait_timeout")
	}
	if o.WaitReplicas > 0 && o.WaitTimeout <= 0 {
		o.WaitTimeout = defaultWaitTimeout
	}
	return nil
}

// knobs points at the fields the three go-redis option types share, so
// that one place sets this ledger's defaults for each.
type knobs struct {
	ctxTimeout           *bool
	dial, read, write    *time.Duration
	dialRetries          *int
	dialRetryTimeout     *time.Duration
	maxRetries, protocol *int
	disableIdentity      *bool
}

// tune sets what the URL (q, as go-redis saw it) left unset.
func (k knobs) tune(q url.Values) {
	// Bounded waits: the guard gives each ledger call its own deadline,
	// and the client must honour it rather than its own 3 s read timeout.
	*k.ctxTimeout = true
	for _, d := range []*time.Duration{k.dial, k.read, k.write} {
		if *d == 0 {
			*d = time.Second
		}
	}
	// Fail closed fast: one dial retry and one command retry (a pooled
	// connection that died with a Redis restart), not go-redis's 5 and 3.
	if *k.dialRetries == 0 {
		*k.dialRetries = 1
		*k.dialRetryTimeout = 20 * time.Millisecond
	}
	if !q.Has("max_retries") {
		*k.maxRetries = 1
	}
	if !q.Has("protocol") {
		// RESP2 works on every server Debian ships and skips the HELLO
		// round trip on connect.
		*k.protocol = 2
	}
	*k.disableIdentity = true
}
