package sut

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/model"
)

// backend runs a queue's operations for the sessions of one installed database. It has two
// implementations: folder, the queue's SQL statements, each sent between two readings of the
// database clock in one pipeline; and goBackend, a queue written in Go, each call made between
// two readings of its own. A session hands it every operation and does not ask which it has;
// what differs between them lives in each: how a call is timed, how ids and tokens are decoded
// into (job, generation), what is checked once the schema is installed and what is forgotten on
// a reset, and whether the queue can lock a job or rescue expired ones. What the model and the
// modes must know of a backend is not asked of it: the queue declares it (Declared).
//
// Every error a statement or call of the queue returns comes back as a StatementError naming
// the contract's file, as a folder's statement would; an answer that breaks the contract outright
// (ErrMultipleRows) and an operation the queue lacks come back as they are.
type backend interface {
	// schema is the DDL run once in the fresh database.
	schema() string
	// install builds the schema in the fresh database on c: schema's DDL, or the queue's own
	// migrator.
	install(ctx context.Context, c *pgx.Conn) error
	// ready checks the backend against the database schema made, before any session runs.
	ready(ctx context.Context, in *Installed) error
	// reset forgets what the backend keeps beside the database, once Reset emptied the queue.
	reset()

	// enqueue adds a job due delay after it ran (a queue without run-at times gets 0).
	enqueue(ctx context.Context, s *Session, payload string, delay time.Duration) (int64, Clock, error)
	claim(ctx context.Context, s *Session, lease time.Duration) (id, gen int64, ok bool, clk Clock, err error)
	complete(ctx context.Context, s *Session, id, gen int64) (int64, Clock, error)
	expire(ctx context.Context, s *Session, id int64) (Clock, error)
	rescue(ctx context.Context, s *Session) ([]int64, Clock, error)
	snapshot(ctx context.Context, s *Session) ([]model.Row, Clock, error)
	// lock row-locks a job in the session's open transaction.
	lock(ctx context.Context, s *Session, id int64) error

	// The lifecycle's (lifecycle.go): a failure and a renewal presenting a claim's token, a
	// worker's heartbeat, a business effect written in the session's transaction, the business
	// table's counts, and what runs after a reset.
	fail(ctx context.Context, s *Session, id, gen int64, retryable bool, text string) (int64, Clock, error)
	renew(ctx context.Context, s *Session, id, gen int64, lease time.Duration) (int64, Clock, error)
	heartbeat(ctx context.Context, s *Session, lease time.Duration) ([]int64, Clock, error)
	effect(ctx context.Context, s *Session, id int64) (Clock, error)
	effects(ctx context.Context, s *Session) ([]model.EffectCount, Clock, error)
	afterReset(ctx context.Context, in *Installed) error

	// extra runs an extra statement of the contract (extra.go).
	extra(ctx context.Context, s *Session, x *Extra, a Args) (Reply, Clock, error)
}

// lacks is the error for an operation the queue does not ship, named by the file a folder
// would hold it in.
func lacks(q *Queue, file string) error { return fmt.Errorf("queue %s has no %s", q.Source, file) }
