package sut

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
)

// FileCancel cancels a job from outside: a job not at an end of its life (ready, running,
// scheduled, waiting a backoff) becomes cancelled, whoever holds it, and its owner's later
// completion, failure, renewal or snooze changes nothing; a job at an end (done, dead, cancelled)
// is left as it is. The snapshot reports a cancelled job in state cancelled.
const FileCancel = "cancel.sql"

// GoCanceller is a GoQueue that cancels a job from outside (cancel.sql), returning the rows it
// changed (0 or 1).
type GoCanceller interface {
	Cancel(ctx context.Context, c *pgx.Conn, id int64) (rows int64, err error)
}

func init() {
	RegisterExtra(&Extra{File: FileCancel, Params: []string{ParamJob}, Answer: RowsChanged,
		Line: "$1 id -> one row, one column: rows changed (0 or 1); the job is cancelled unless it is done, dead or cancelled",
		Can:  func(c *model.Can) { c.Cancel = true },
		Go: func(g GoQueue) GoCall {
			x, ok := g.(GoCanceller)
			if !ok {
				return nil
			}
			return func(ctx context.Context, c *pgx.Conn, a Args) (Reply, error) {
				n, err := x.Cancel(ctx, c, a.Job)
				return Reply{Rows: n}, err
			}
		}})
}
