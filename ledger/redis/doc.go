// Package redis is the replay ledger in Redis (or Valkey), for several
// instances. Importing it makes ledger.Open accept these settings; it
// lives apart from package ledger so that programs that do not use it do
// not link go-redis.
//
//	redis://[user:password@]host:6379/0         one server (rediss:// for TLS)
//	redis+cluster://[user:password@]h1:7000?addr=h2:7000&addr=h3:7000
//	                                            a Redis Cluster, from its seed nodes
//	redis+sentinel://[user:password@]s1:26379/0?master_name=mymaster&addr=s2:26379&addr=s3:26379
//	                                            the master a Sentinel set names; the URL's
//	                                            user:password@ logs into the sentinels,
//	                                            ?username=&password= into the master
//	valkey://, valkeys://, valkey+cluster://, … the same, for Valkey
//
// The host part and the query are go-redis's own (ParseURL,
// ParseClusterURL, ParseFailoverURL: addr=, dial_timeout=, pool_size=,
// skip_verify=, …). This package adds:
//
//	prefix=mrtr:op:              the key prefix (as ledger.WithPrefix)
//	password_file=/path          the password of the data nodes, from the file's
//	                             first line (instead of one in the URL)
//	sentinel_password_file=/path the sentinels' password (redis+sentinel:// only)
//	tls_ca_file=/path            PEM certificates the server's must chain to,
//	                             instead of the system's (rediss… only)
//	wait_replicas=1              a claim and a result count only once this many
//	                             replicas acknowledged them (WAIT); otherwise the
//	                             call fails closed (ErrNotReplicated, retryable)
//	wait_timeout=100ms           how long WAIT waits (default 100ms); keep it
//	                             under the guard's ledger timeout (1 s by default)
//
// Passwords never appear in errors, and the ledger prints and logs only
// its deployment, addresses, prefix and WAIT setting.
//
// Every command and script touches a single key (the prefix and the
// operation id), so in a cluster each lives in one hash slot, and Go and
// sdk-js's RedisLedger share one layout on any deployment. Do not put a
// hash tag ({…}) in the prefix: it would send every operation to one
// slot.
//
// What wait_replicas buys: replication is asynchronous, so a master that
// dies can take its last writes with it. A claim or a result that a
// replica acknowledged survives a failover to that replica; without WAIT
// a result Finish reported stored can vanish, and a replay then runs the
// effect again. What it costs: one replication round trip on each claim
// and each result, and no claims at all while no replica is in sync (the
// ledger fails closed until one is).
package redis
