package goqueues

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

func init() {
	sut.Register(sut.GoDef{Name: "effects", New: func() sut.GoQueue { return &effects{} }})
	sut.Register(sut.GoDef{Name: "effect-own-transaction", Broken: true, New: func() sut.GoQueue { return &effects{ownTxn: true} }})
	sut.Register(sut.GoDef{Name: "effect-kept-on-refusal", Broken: true, New: func() sut.GoQueue { return &effects{commitsAnyway: true} }})
}

// effects is the seed's queue whose worker writes a business effect (an order fulfilled) in
// the transaction of the job's completion, written first, as the seed advises for
// database-only work: the suite opens that transaction, calls Effect then Complete on the
// worker's connection, and commits only when the completion changed one row (sut.GoEffector).
// Its mutants get the transaction wrong the two ways workers do.
type effects struct {
	// ownTxn: the effect commits in a transaction of its own, on a connection of its own,
	// before the completion runs, so a refused completion cannot take it back.
	ownTxn bool
	// commitsAnyway: the completion commits the transaction it runs in, whatever it changed, so
	// the effect before it is kept when it changed nothing.
	commitsAnyway bool
}

const effectsSchema = `CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running','done')),
  generation bigint NOT NULL DEFAULT 0,
  lease_until timestamptz,
  payload jsonb NOT NULL
);
CREATE TABLE fulfilled (job_id bigint NOT NULL, fulfilled_at timestamptz NOT NULL DEFAULT clock_timestamp());`

func (q *effects) Schema() string { return effectsSchema }

func (q *effects) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (int64, error) {
	var id int64
	err := c.QueryRow(ctx, `INSERT INTO jobs(payload) VALUES ($1) RETURNING id`, payload).Scan(&id)
	return id, err
}

func (q *effects) Claim(ctx context.Context, c *pgx.Conn, lease time.Duration, _ string) (int64, int64, bool, error) {
	var id, gen int64
	err := c.QueryRow(ctx, `WITH candidate AS (
  SELECT id FROM jobs
  WHERE state='ready' OR (state='running' AND lease_until<clock_timestamp())
  ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1
)
UPDATE jobs AS j SET state='running', generation=j.generation+1, lease_until=clock_timestamp()+$1::interval
FROM candidate WHERE j.id=candidate.id RETURNING j.id, j.generation`, lease).Scan(&id, &gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, nil
	}
	return id, gen, err == nil, err
}

func (q *effects) Complete(ctx context.Context, c *pgx.Conn, id, gen int64) (int64, error) {
	var n int64
	err := c.QueryRow(ctx, `WITH completed AS (
  UPDATE jobs SET state='done'
  WHERE id=$1 AND state='running' AND generation=$2 AND lease_until>clock_timestamp()
  RETURNING id
) SELECT count(*) FROM completed`, id, gen).Scan(&n)
	if err == nil && q.commitsAnyway && c.PgConn().TxStatus() == 'T' {
		_, err = c.Exec(ctx, "COMMIT")
	}
	return n, err
}

func (q *effects) Expire(ctx context.Context, c *pgx.Conn, id int64) error {
	_, err := c.Exec(ctx, `UPDATE jobs SET lease_until=clock_timestamp()-interval '1 second' WHERE id=$1`, id)
	return err
}

func (q *effects) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	rows, _ := c.Query(ctx, `SELECT id, state, generation, coalesce(lease_until>clock_timestamp(), false) FROM jobs ORDER BY id`)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Row, error) {
		var r model.Row
		var state string
		err := row.Scan(&r.ID, &state, &r.Generation, &r.LeaseLive)
		r.State = model.State(state)
		return r, err
	})
}

func (q *effects) Lock(ctx context.Context, c *pgx.Conn, id int64) error {
	_, err := c.Exec(ctx, `SELECT id FROM jobs WHERE id=$1 FOR UPDATE`, id)
	return err
}

const fulfillSQL = `INSERT INTO fulfilled(job_id) VALUES ($1)`

func (q *effects) Effect(ctx context.Context, c *pgx.Conn, id int64) error {
	if !q.ownTxn {
		_, err := c.Exec(ctx, fulfillSQL, id)
		return err
	}
	own, err := pgx.ConnectConfig(ctx, c.Config())
	if err != nil {
		return err
	}
	defer own.Close(context.WithoutCancel(ctx))
	_, err = own.Exec(ctx, fulfillSQL, id)
	return err
}

func (q *effects) Effects(ctx context.Context, c *pgx.Conn) ([]model.EffectCount, error) {
	rows, _ := c.Query(ctx, `SELECT job_id, count(*) FROM fulfilled GROUP BY job_id ORDER BY job_id`)
	return pgx.CollectRows(rows, pgx.RowToStructByPos[model.EffectCount])
}
