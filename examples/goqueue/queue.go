// Package goqueue is a job queue whose logic is Go code over pgx, as many teams write theirs:
// a claim takes the lowest ready job (or one whose lease ran out) with FOR UPDATE SKIP LOCKED,
// and a completion is refused unless it presents the claim's token while the lease is live.
package goqueue

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
)

// Queue is the queue's client. It keeps no state of its own: everything is in its table.
type Queue struct{}

// Schema creates the queue's table.
func (*Queue) Schema() string {
	return `CREATE TABLE tasks (
		id bigserial PRIMARY KEY,
		done boolean NOT NULL DEFAULT false,
		token bigint NOT NULL DEFAULT 0,
		lease_until timestamptz,
		body text NOT NULL
	)`
}

// Enqueue adds a task.
func (*Queue) Enqueue(ctx context.Context, c *pgx.Conn, payload string) (int64, error) {
	var id int64
	err := c.QueryRow(ctx, `INSERT INTO tasks (body) VALUES ($1) RETURNING id`, payload).Scan(&id)
	return id, err
}

// Claim takes the lowest task that is not done and not leased, for lease.
func (*Queue) Claim(ctx context.Context, c *pgx.Conn, lease time.Duration, _ string) (id, token int64, ok bool, err error) {
	err = c.QueryRow(ctx, `
		UPDATE tasks SET token = token + 1, lease_until = clock_timestamp() + $1::interval
		WHERE id = (
			SELECT id FROM tasks
			WHERE NOT done AND (lease_until IS NULL OR lease_until < clock_timestamp())
			ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1)
		RETURNING id, token`, lease).Scan(&id, &token)
	if err == pgx.ErrNoRows {
		return 0, 0, false, nil
	}
	return id, token, err == nil, err
}

// Complete marks a task done if token is its current claim's and the lease has not run out.
func (*Queue) Complete(ctx context.Context, c *pgx.Conn, id, token int64) (int64, error) {
	tag, err := c.Exec(ctx, `
		UPDATE tasks SET done = true
		WHERE id = $1 AND NOT done AND token = $2 AND lease_until > clock_timestamp()`, id, token)
	return tag.RowsAffected(), err
}

// Expire ends a task's lease now (the judge's hook for a lease that ran out).
func (*Queue) Expire(ctx context.Context, c *pgx.Conn, id int64) error {
	_, err := c.Exec(ctx, `UPDATE tasks SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $1`, id)
	return err
}

// Snapshot lists every task as the judge's model reads a job.
func (*Queue) Snapshot(ctx context.Context, c *pgx.Conn) ([]model.Row, error) {
	rows, err := c.Query(ctx, `
		SELECT id,
			CASE WHEN done THEN 'done' WHEN token = 0 THEN 'ready' ELSE 'running' END,
			token, coalesce(lease_until > clock_timestamp(), false)
		FROM tasks ORDER BY id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (model.Row, error) {
		var row model.Row
		var state string
		err := r.Scan(&row.ID, &state, &row.Generation, &row.LeaseLive)
		row.State = model.State(state)
		return row, err
	})
}
