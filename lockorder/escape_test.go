package lockorder_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"pgqcheck/lockorder"
	"pgqcheck/model"
	"pgqcheck/sut"
	"pgqcheck/sut/suttest"
)

// escapes is the opposite-order queue of testdata/lockorder with one bug: its worker records
// the transfer on a connection of its own, which commits at once, before it locks the accounts
// in the completion's transaction. A transaction Postgres aborts in a deadlock keeps its
// record, and the retry writes a second.
type escapes struct{}

func init() {
	sut.Register(sut.GoDef{Name: "lock-order-effect-escapes", Broken: true, New: func() sut.GoQueue { return &escapes{} }})
}

func (q *escapes) file(name string) string {
	b, err := os.ReadFile(filepath.Join(opposite, name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// opposite is the folder whose SQL the Go queue runs, but for its effect's record.
var opposite string

func (q *escapes) Schema() string { return q.file("schema.sql") }
func (q *escapes) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (int64, error) {
	var id int64
	err := c.QueryRow(ctx, q.file("enqueue.sql"), payload).Scan(&id)
	return id, err
}
func (q *escapes) Claim(ctx context.Context, c *pgx.Conn, lease time.Duration, _ string) (int64, int64, bool, error) {
	var id, gen int64
	err := c.QueryRow(ctx, q.file("claim.sql"), lease).Scan(&id, &gen)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, false, nil
	}
	return id, gen, err == nil, err
}
func (q *escapes) Complete(ctx context.Context, c *pgx.Conn, id, gen int64) (int64, error) {
	var n int64
	err := c.QueryRow(ctx, q.file("complete.sql"), id, gen).Scan(&n)
	return n, err
}
func (q *escapes) Expire(ctx context.Context, c *pgx.Conn, id int64) error {
	_, err := c.Exec(ctx, q.file("expire.sql"), id)
	return err
}
func (q *escapes) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	rows, _ := c.Query(ctx, q.file("snapshot.sql"))
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (model.Row, error) {
		var r model.Row
		var state string
		err := row.Scan(&r.ID, &state, &r.Generation, &r.LeaseLive)
		r.State = model.State(state)
		return r, err
	})
}
func (q *escapes) Rebuild(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, q.file("reset.sql"))
	return err
}

// Effect records the transfer in a transaction of its own, then locks and moves the accounts
// in the worker's, debit first.
func (q *escapes) Effect(ctx context.Context, c *pgx.Conn, id int64) error {
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
func (q *escapes) Effects(ctx context.Context, c *pgx.Conn) ([]model.EffectCount, error) {
	rows, _ := c.Query(ctx, q.file("effects.sql"))
	return pgx.CollectRows(rows, pgx.RowToStructByPos[model.EffectCount])
}

// The retry check can fail: where the aborted transaction's effect escaped it, the retried
// transaction leaves a second effect of its job.
func TestRetryDuplicatesAnEscapedEffect(t *testing.T) {
	opposite = suttest.ModuleDir(t, "testdata/lockorder/opposite")
	q, _ := sut.Registered("lock-order-effect-escapes")
	out := run(t, suttest.Install(t, q), lockorder.Bounded)
	if out.Finding == nil || out.Finding.Property() != model.PEffects || out.Retries != 1 {
		t.Fatalf("the retried transaction's duplicate went unseen (finding %v, %d retries)", out.Finding, out.Retries)
	}
	t.Logf("%s", out.Finding.Verdict())
}
