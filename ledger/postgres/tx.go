package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/internal/opcheck"
)

// claimTimeout bounds getting a connection, beginning and claiming in
// OnceTx (the claim's own lock wait is shorter).
const claimTimeout = time.Second

// Effect is an effect that writes through tx, the transaction that also
// claims the operation and records the result it returns.
type Effect func(ctx context.Context, tx pgx.Tx) ([]byte, error)

// OnceTx runs effect at most once for op, inside one transaction that
// claims op, runs effect and stores its result: they commit together or
// not at all. It answers:
//
//   - Acquired, with Result the effect's result: it ran and committed.
//   - Finished, with the stored result: op was done before; effect did
//     not run.
//   - InProgress: another transaction or live claim holds op (the claim
//     waits up to 200 ms for it); ask again.
//   - Conflict: op is held or done with another fingerprint.
//
// effect's errors (and panics) roll everything back and come back as
// they are. A failure of PostgreSQL itself (connecting, claiming,
// committing) rolls back too and wraps ledger.ErrUnavailable: nothing
// happened, or, when the connection broke during COMMIT, everything did;
// either way a retry is right, and it gets the stored result if the
// commit had landed. Getting a connection and claiming take at most 1 s
// (a full pool fails closed then). ctx bounds the whole transaction: end
// it at op.Lease (host.Guard.OnceTx does), so a stuck effect cannot hold
// op's row lock for longer.
func (l *Ledger) OnceTx(ctx context.Context, op ledger.Op, effect Effect) (ledger.Claim, error) {
	if err := opcheck.Op(op.ID); err != nil {
		return ledger.Claim{}, err
	}
	if effect == nil {
		return ledger.Claim{}, errors.New("ledger: postgres: OnceTx needs an effect")
	}
	if l.closed.Load() {
		return ledger.Claim{}, unavailable(ledger.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return ledger.Claim{}, unavailable(err)
	}
	l.sweep(ctx)
	// The effect may take its lease; a connection and the claim may not:
	// a full pool or a stuck server fails closed within claimTimeout.
	cctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	tx, err := l.pool.Begin(cctx)
	if err != nil {
		return ledger.Claim{}, unavailable(err)
	}
	defer rollback(ctx, tx)
	token := opcheck.NewToken()
	// One round trip: wait at most claimLockTimeout for a transaction that
	// holds op, then give the effect the session's own lock_timeout back.
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('lock_timeout', $1, true)`, claimLockTimeout)
	b.Queue(claimSQL, op.ID, token, op.Fingerprint[:], opcheck.Ms(op.Lease))
	b.Queue(`SET LOCAL lock_timeout TO DEFAULT`)
	br := tx.SendBatch(cctx, b)
	_, err = br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if lockNotAvailable(err) {
			return ledger.Claim{Status: ledger.InProgress}, nil
		}
		return ledger.Claim{}, unavailable(err)
	}
	if tag.RowsAffected() != 1 {
		c, found, err := lookup(cctx, tx, op.ID, op.Fingerprint)
		if err != nil {
			return ledger.Claim{}, unavailable(err)
		}
		if !found {
			// Released or expired between the two statements.
			c = ledger.Claim{Status: ledger.InProgress}
		}
		return c, nil
	}
	res, err := effect(ctx, tx)
	if err != nil {
		return ledger.Claim{}, err
	}
	res = opcheck.Clone(res)
	tag, err = tx.Exec(ctx, `UPDATE mrtr_ledger SET done = true, result = $3,
		expires = statement_timestamp() + $4::bigint * interval '1 millisecond'
		WHERE op = $1 AND token = $2`, op.ID, token, res, opcheck.Ms(op.TTL))
	if err == nil && tag.RowsAffected() != 1 {
		err = errors.New("the claimed row is gone (did the effect touch mrtr_ledger?)")
	}
	if err != nil {
		return ledger.Claim{}, unavailable(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return ledger.Claim{}, unavailable(err)
	}
	return ledger.Claim{Status: ledger.Acquired, Token: token, Result: res}, nil
}

// Tx binds effect to l for host.Guard.OnceTx:
//
//	res, replay, err := guard.OnceTx(ctx, outcome, pl.Tx(func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
//		... write through tx ...
//	}))
func (l *Ledger) Tx(effect Effect) func(context.Context, ledger.Op) (ledger.Claim, error) {
	return func(ctx context.Context, op ledger.Op) (ledger.Claim, error) { return l.OnceTx(ctx, op, effect) }
}

func unavailable(err error) error {
	return fmt.Errorf("%w: %w", ledger.ErrUnavailable, err)
}

// lockNotAvailable reports SQLSTATE 55P03 (lock_not_available: the
// claim's lock_timeout ran out).
func lockNotAvailable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}
