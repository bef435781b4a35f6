package sut

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
)

// FileSnooze is the owner's snooze of its job: presenting its claim, as a completion does, it
// puts the job back to wait the delay, without spending an attempt (where the queue counts
// attempts at the claim, it gives that claim's attempt back). A stale or expired owner's snooze
// changes nothing.
const FileSnooze = "snooze.sql"

// GoSnoozer is a GoQueue whose job's owner snoozes it (snooze.sql), returning the rows it
// changed (0 or 1).
type GoSnoozer interface {
	Snooze(ctx context.Context, c *pgx.Conn, id, gen int64, delay time.Duration) (rows int64, err error)
}

func init() {
	RegisterExtra(&Extra{File: FileSnooze, Params: []string{ParamToken, ParamDelay}, Answer: RowsChanged,
		Line: "$1 id, $2 generation (or the claim's tokens), then the delay (interval) -> one row, one column: rows changed (0 or 1)",
		Can:  func(c *model.Can) { c.Snooze = true },
		Go: func(g GoQueue) GoCall {
			x, ok := g.(GoSnoozer)
			if !ok {
				return nil
			}
			return func(ctx context.Context, c *pgx.Conn, a Args) (Reply, error) {
				n, err := x.Snooze(ctx, c, a.Job, a.Gen, a.Delay)
				return Reply{Rows: n}, err
			}
		}})
}
