package sut

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
)

// FileUnique enqueues a job by a key: it inserts nothing while a job that holds the key is at no
// end of its life (ready, running, waiting its run-at time or backoff); a key whose job is done,
// dead or cancelled is free again.
const FileUnique = "enqueue_unique.sql"

// GoUniqueEnqueuer is a GoQueue that enqueues a job by a key (enqueue_unique.sql); ok is false
// where it inserted nothing.
type GoUniqueEnqueuer interface {
	EnqueueUnique(ctx context.Context, c *pgx.Conn, payload, key string) (id int64, ok bool, err error)
}

func init() {
	RegisterExtra(&Extra{File: FileUnique, Params: []string{ParamPayload, ParamKey}, Answer: MaybeID,
		Line: "$1 payload (jsonb), $2 key (text) -> zero or one row: id; none where a job that is not done, dead or cancelled holds the key",
		Can:  func(c *model.Can) { c.Unique = true },
		Go: func(g GoQueue) GoCall {
			x, ok := g.(GoUniqueEnqueuer)
			if !ok {
				return nil
			}
			return func(ctx context.Context, c *pgx.Conn, a Args) (Reply, error) {
				id, ok, err := x.EnqueueUnique(ctx, c, a.Payload, a.Key)
				return Reply{Job: id, Found: ok}, err
			}
		}})
}
