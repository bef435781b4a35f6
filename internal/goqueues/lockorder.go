package goqueues

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

func init() {
	sut.Register(sut.GoDef{Name: "lock-order-effect-escapes", Broken: true, New: func() sut.GoQueue { return &effectEscapes{} }})
}

// effectEscapes is the seed's queue with testdata/mutants/lock-order-opposite's business (each
// job moves a unit between two of three accounts, locking the one it debits first) and one more
// bug: the transfer's record is written on a connection of its own, which commits at once,
// before the accounts are locked in the completion's transaction. A transaction Postgres aborts
// in a deadlock keeps its record, and a retry of it writes a second.
type effectEscapes struct{ effects }

const lockOrderSchema = `CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running','done')),
  generation bigint NOT NULL DEFAULT 0,
  lease_until timestamptz,
  payload jsonb NOT NULL
);
CREATE TABLE accounts (id int PRIMARY KEY, balance bigint NOT NULL);
INSERT INTO accounts VALUES (1, 0), (2, 0), (3, 0);
CREATE TABLE transfers (job_id bigint NOT NULL, made_at timestamptz NOT NULL DEFAULT clock_timestamp());`

func (q *effectEscapes) Schema() string { return lockOrderSchema }

// Rebuild puts the accounts back after the suite's reset emptied them.
func (q *effectEscapes) Rebuild(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, `INSERT INTO accounts VALUES (1, 0), (2, 0), (3, 0)`)
	return err
}

func (q *effectEscapes) Effect(ctx context.Context, c *pgx.Conn, id int64) error {
	own, err := pgx.ConnectConfig(ctx, c.Config())
	if err != nil {
		return err
	}
	defer own.Close(context.WithoutCancel(ctx))
	if _, err := own.Exec(ctx, `INSERT INTO transfers(job_id) VALUES ($1)`, id); err != nil {
		return err
	}
	_, err = c.Exec(ctx, `WITH route AS (
  SELECT 1 + ($1::bigint + 1) % 2 AS debit, 1 + ($1::bigint + 1) % 3 AS credit
), locked AS (
  SELECT a.id FROM accounts a, route r WHERE a.id IN (r.debit, r.credit)
  ORDER BY a.id = r.debit DESC FOR UPDATE OF a
)
UPDATE accounts SET balance = balance + CASE WHEN id = (SELECT debit FROM route) THEN -1 ELSE 1 END
WHERE id IN (SELECT id FROM locked)`, id)
	return err
}

func (q *effectEscapes) Effects(ctx context.Context, c *pgx.Conn) ([]model.EffectCount, error) {
	rows, _ := c.Query(ctx, `SELECT job_id, count(*) FROM transfers GROUP BY job_id ORDER BY job_id`)
	return pgx.CollectRows(rows, pgx.RowToStructByPos[model.EffectCount])
}
