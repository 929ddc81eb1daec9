// Package ledger is the replay ledger behind host.Guard.Once: it records
// which MRTR operations have run their side effect and what they
// returned, so that a retry of an accepted request acts at most once,
// across every server instance that shares the ledger.
//
// The state of an MRTR request travels with the client, so any instance
// can finish any round, and nothing stops a client (or someone who copied
// its traffic) from sending the same accepted final retry twice. The
// sealed state carries a 128-bit operation id, the same in every round
// of one logical request; the ledger keys on it.
//
// # Protocol
//
// Claim takes the operation before the effect runs. It answers Acquired
// (run it), InProgress (a live claim with the same answers holds it),
// Finished (here is the stored result) or Conflict (the operation was
// claimed or done with other answers). After the effect, Finish stores
// its result for as long as a state of the operation can still open plus
// a margin, or Release drops the
// claim if the effect failed, so the user can retry. Every call is
// atomic in its store; Finish and Release check the claim's token, so an
// owner whose lease ran out never overwrites the next owner's claim or
// result. The ledger stores a SHA-256 fingerprint of the answers, never
// the answers.
//
// # Backends
//
// Open takes one URL-like setting. The memory ledger is always there;
// the others live in their own packages, so that a program that imports
// only host links neither SQLite, go-redis nor pgx. Import a backend to make
// Open accept its scheme (the mrtr-wasm command imports them all):
//
//		import _ "github.com/mrtr-wasm/mrtr-wasm/ledger/sqlite" // sqlite:, file:; or sqlite.Open(ctx, path)
//		import _ "github.com/mrtr-wasm/mrtr-wasm/ledger/redis"  // redis://, redis+cluster://, redis+sentinel://; or redis.New(client)
//		import _ "github.com/mrtr-wasm/mrtr-wasm/ledger/postgres" // postgres://; or postgres.New(ctx, pool)
//
//	  - "memory:" (the default): this process only, bounded in entries
//	    (WithMaxEntries, memory:?max=N), in bytes (WithMaxBytes,
//	    memory:?max_bytes=N, default 256 MiB; a full ledger refuses new
//	    claims) and in time.
//	    Lost on restart; right for one instance, tests and development.
//	  - "sqlite:/path/file.db" (or "file:"): one file for the processes of
//	    one machine, through the pure-Go modernc.org/sqlite. WAL with
//	    synchronous=FULL: a claim and a result are fsynced before the call
//	    returns, so "done" survives a crash of the process or the machine.
//	    Writers from several processes wait for each other in SQLite's busy
//	    handler; the file is meant for moderate write rates, not a fleet.
//	  - "redis://host:6379/0": several instances. A claim is SET NX PX (the
//	    lease expires inside Redis when its owner dies); Finish and Release
//	    are Lua scripts. A Redis without persistence forgets every claim and
//	    result when it restarts: an operation finished before the restart
//	    and replayed after it runs again, and an effect running across the
//	    restart can be claimed a second time. Run production Redis with
//	    appendonly yes (appendfsync always for the strongest guarantee,
//	    everysec to risk one second).
//	  - "redis+cluster://h1:7000?addr=h2:7000" (Redis Cluster) and
//	    "redis+sentinel://s1:26379?master_name=m&addr=s2:26379" (a master
//	    that Sentinel fails over); rediss… for TLS, valkey… alike. Every
//	    command and script touches one key, so one hash slot. Replication
//	    is asynchronous: a master that dies can take its last acknowledged
//	    claims and results with it, and the promoted replica then lets a
//	    replay run the effect again. wait_replicas=1 closes that window:
//	    each claim and result counts only once a replica acknowledged it
//	    (WAIT), else the call fails closed; it costs a replication round
//	    trip per write, and claims fail while no replica is in sync. See
//	    package ledger/redis for every option.
//	  - "postgres://user@host:5432/db?search_path=app": several instances,
//	    through pgx. One table, mrtr_ledger, created on first start in the
//	    first schema of search_path; times are PostgreSQL's. A claim and a
//	    result are committed (as durable as the server makes a commit)
//	    before the call returns, so a restart of PostgreSQL forgets
//	    nothing. Its OnceTx goes further: see below.
//
// # What Once can and cannot promise
//
// Once guarantees that, for one operation id, the effect is started by at
// most one caller at a time, and that after a successful Finish no caller
// starts it again while the entry lives (the round limit times the
// state's TTL, plus the margin: a replay can seal a further round, a
// re-ask, with a fresh TTL, so that is how long some state of the
// operation may still open; after it none does, so nothing can be
// replayed). Every duplicate gets the same stored result bytes.
//
// It cannot make a non-idempotent effect exactly-once by itself. If the
// process dies after the effect but before Finish (or Finish cannot reach
// the ledger), the claim stays until its lease ends, and a retry after
// that runs the effect again: the ledger never learnt it had happened.
// Once reports the case it sees (the result with a "not_recorded" error);
// it cannot see its own death. For true exactly-once, the effect must
// itself be idempotent, for example by passing the operation id as the
// downstream idempotency key (a payment API's Idempotency-Key, a unique
// column in your database), or be transactional with the ledger (record
// the result in the same database transaction as the effect).
//
// The PostgreSQL ledger does the latter for an effect that writes to its
// own database: host.Guard.OnceTx with postgres.Ledger.Tx runs the claim,
// the effect and the result in one transaction, which commits whole or
// not at all. A crash of the process or of PostgreSQL at any moment
// leaves either nothing (the retry runs the effect) or everything (the
// retry gets the stored result); no claim is left behind to wait out its
// lease, and no idempotency key is needed.
//
// The lease bounds how long a dead owner blocks the operation (default
// 30 s). Once ends the effect's context when the lease ends, so an effect
// that honours its context is not still running when another instance
// may claim the operation; an effect that ignores it can overlap a second
// run, and its late Finish is refused (ErrLost, "lease_lost").
//
// When the ledger cannot be reached or does not answer within its
// timeout, Once fails closed: the effect does not run, nothing is
// recorded as done, and the caller gets a retryable error.
package ledger
