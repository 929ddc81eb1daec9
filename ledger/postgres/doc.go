// Package postgres is the replay ledger in PostgreSQL, for several
// instances, through pgx. Importing it makes ledger.Open accept
// "postgres://…" and "postgresql://…"; it lives apart from package
// ledger so that programs that do not use it do not link pgx.
//
// Its table, mrtr_ledger, is created on first start (under an advisory
// lock, so instances starting at once take turns) in the first schema of
// the connection's search_path: set search_path=… in the URL to keep
// deployments apart in one database.
//
// Besides the ledger.Ledger calls, OnceTx runs an effect that writes to
// the same database inside the transaction that claims the operation and
// records its result: they commit together or not at all, so a crash of
// this process or of PostgreSQL at any moment leaves either nothing (a
// retry runs the effect) or everything (a retry gets the stored result).
// No idempotency key is needed downstream. host.Guard.OnceTx runs it for
// an MRTR outcome.
//
// A Node.js server (sdk-js) does the same with pg on the same table, so
// Go and Node servers share it; on one client:
//
//	BEGIN;
//	SELECT set_config('lock_timeout', '200ms', true);
//	INSERT INTO mrtr_ledger AS l (op, done, token, fp, result, expires)
//	  VALUES ($op, false, $token, decode($answersDigest, 'hex'), NULL,
//	          statement_timestamp() + $leaseMs * interval '1 millisecond')
//	  ON CONFLICT (op) DO UPDATE SET done = false, token = excluded.token,
//	    fp = excluded.fp, result = NULL, expires = excluded.expires
//	  WHERE l.expires <= statement_timestamp();
//	SET LOCAL lock_timeout TO DEFAULT;
//	-- no row inserted: SELECT done, fp, result FROM mrtr_ledger WHERE op = $op
//	--   AND expires > statement_timestamp(); answer replay (same fp, done),
//	--   conflict (other fp) or in progress, and ROLLBACK (SQLSTATE 55P03
//	--   also means in progress)
//	-- else: the effect on this client, then
//	UPDATE mrtr_ledger SET done = true, result = $result,
//	  expires = statement_timestamp() + $ttlMs * interval '1 millisecond'
//	  WHERE op = $op AND token = $token;
//	COMMIT;  -- ROLLBACK on any error
//
// $op is outcome.operationId, $answersDigest outcome.answersDigest,
// $token 32 random hex characters, the TTL the outcome's remember time
// plus a margin.
package postgres
