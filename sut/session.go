package sut

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
)

// Session is one connection to the queue's database: a worker, a locker, or a snapshot reader.
type Session struct {
	Name string
	// Worker is the name a claim passes where claim.sql takes the worker's name: the session's
	// name until its worker crashes and comes back under a new one.
	Worker string
	PID    uint32
	conn   *pgx.Conn
	q      *Queue
	in     *Installed

	stmts map[string]*pgconn.StatementDescription // the queue's statements, prepared
}

// SessionOptions tune a session for the mode it serves.
type SessionOptions struct {
	// LockTimeout bounds how long a statement may wait for a row lock. Sequential runs set it
	// short: nothing they do should ever wait, and a wait there would otherwise hang forever
	// behind the run's own locker (property 9). Zero leaves the server's default.
	LockTimeout time.Duration
	// StatementTimeout bounds every statement; zero leaves the server's default.
	StatementTimeout time.Duration
	// Dial, when set, opens the session's connection in place of pgx's own dialer (the fault
	// proxy's, see WithDial); the session then runs without TLS.
	Dial DialFunc
}

// Connect opens a session named name (its application_name is pgqcheck-<name>).
func (in *Installed) Connect(ctx context.Context, name string, o SessionOptions) (*Session, error) {
	c, err := connectVia(ctx, in.DSN, "pgqcheck-"+name, o.Dial)
	if err != nil {
		return nil, err
	}
	s := &Session{Name: name, Worker: name, PID: c.PgConn().PID(), conn: c, q: in.Queue, in: in}
	for param, d := range map[string]time.Duration{"lock_timeout": o.LockTimeout, "statement_timeout": o.StatementTimeout} {
		if d > 0 {
			if _, err := c.Exec(ctx, fmt.Sprintf("SET %s = %d", param, d.Milliseconds())); err != nil {
				c.Close(ctx)
				return nil, fmt.Errorf("pgqcheck: setting %s: %s", param, textfmt.ErrLine(err))
			}
		}
	}
	return s, nil
}

// Close ends the session; an open transaction is rolled back by the server.
func (s *Session) Close() { s.conn.Close(context.Background()) }

// Conn exposes the connection, for the harness's own statements (BEGIN, pg_sleep).
func (s *Session) Conn() *pgx.Conn { return s.conn }

// StatementError is a queue statement that failed: which file, and Postgres's SQLSTATE.
// Property 9 reports these as findings on a correct-looking queue.
type StatementError struct {
	File     string
	SQLState string // empty when the failure was not a Postgres error (connection lost...)
	Msg      string
	Err      error
}

func (e *StatementError) Error() string {
	if e.SQLState != "" {
		return fmt.Sprintf("%s failed: %s (SQLSTATE %s)", e.File, e.Msg, e.SQLState)
	}
	return fmt.Sprintf("%s failed: %s", e.File, e.Msg)
}

func (e *StatementError) Unwrap() error { return e.Err }

// LockWait reports whether the statement gave up waiting for a lock (lock_timeout), which on
// a sequential run means it would have blocked on another session's row lock.
func (e *StatementError) LockWait() bool { return e.SQLState == "55P03" }

func stmtErr(file string, err error) error {
	if err == nil {
		return nil
	}
	se := &StatementError{File: file, Msg: err.Error(), Err: err}
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		se.SQLState, se.Msg = pg.Code, pg.Message
	}
	return se
}

// ErrMultipleRows is a claim that returned more than one row: a violation, not a crash.
type ErrMultipleRows struct{ Rows [][2]int64 }

func (e *ErrMultipleRows) Error() string {
	return fmt.Sprintf("claim returned %d rows %v; a claim returns at most one job", len(e.Rows), e.Rows)
}

// Violation turns the multi-row claim into the property it breaks.
func (e *ErrMultipleRows) Violation() *model.Violation {
	return model.Violate(model.PExclusion, "%s", e.Error())
}

// Enqueue adds a job with the given JSON payload and returns its id.
func (s *Session) Enqueue(ctx context.Context, payload string) (int64, Clock, error) {
	return s.in.be.enqueue(ctx, s, payload, 0)
}

// EnqueueAt adds a job due delay after the enqueue runs (the queue's run-at time; a queue
// without one makes it due at once).
func (s *Session) EnqueueAt(ctx context.Context, payload string, delay time.Duration) (int64, Clock, error) {
	return s.in.be.enqueue(ctx, s, payload, delay)
}

// Fail reports a failure of the claim (id, generation, and its token) as the job's owner:
// retryable or not, with an error text the queue keeps. It returns the rows changed.
func (s *Session) Fail(ctx context.Context, id, gen int64, retryable bool, text string) (int64, Clock, error) {
	return s.in.be.fail(ctx, s, id, gen, retryable, text)
}

// Renew extends the claim's lease to lease from now, as its owner's heartbeat; it returns the
// rows changed.
func (s *Session) Renew(ctx context.Context, id, gen int64, lease time.Duration) (int64, Clock, error) {
	return s.in.be.renew(ctx, s, id, gen, lease)
}

// Heartbeat renews every live lease of the session's worker, where leases are the worker's,
// and returns the jobs it extended.
func (s *Session) Heartbeat(ctx context.Context, lease time.Duration) ([]int64, Clock, error) {
	return s.in.be.heartbeat(ctx, s, lease)
}

// Effect writes a job's business effect in the session's open transaction (effect.sql).
func (s *Session) Effect(ctx context.Context, id int64) (Clock, error) {
	return s.in.be.effect(ctx, s, id)
}

// Effects reads the business table's effect count of every job that has one.
func (s *Session) Effects(ctx context.Context) ([]model.EffectCount, Clock, error) {
	return s.in.be.effects(ctx, s)
}

// Claim asks for a job with the given lease length (ignored where the queue fixes its own). ok is
// false when the queue returned no row.
func (s *Session) Claim(ctx context.Context, lease time.Duration) (id, gen int64, ok bool, clk Clock, err error) {
	return s.in.be.claim(ctx, s, lease)
}

// Complete presents a claim's token (id, generation, and whatever else the claim returned) and
// returns how many rows the queue says it completed.
func (s *Session) Complete(ctx context.Context, id, gen int64) (int64, Clock, error) {
	return s.in.be.complete(ctx, s, id, gen)
}

// Expire runs the test hook that moves a job's lease into the past.
func (s *Session) Expire(ctx context.Context, id int64) (Clock, error) {
	return s.in.be.expire(ctx, s, id)
}

// Rescue runs the queue's rescue step and returns the jobs it made ready.
func (s *Session) Rescue(ctx context.Context) ([]int64, Clock, error) {
	return s.in.be.rescue(ctx, s)
}

// Snapshot reads every job (every live job, where done rows are deleted), ordered by job.
func (s *Session) Snapshot(ctx context.Context) ([]model.Row, Clock, error) {
	return s.in.be.snapshot(ctx, s)
}

// Begin, Lock, Commit and Rollback drive a locker: a session that holds a job's row lock in an
// open transaction, as the seed's manual-locker does.
func (s *Session) Begin(ctx context.Context) error {
	_, err := s.conn.Exec(ctx, "BEGIN")
	return err
}

func (s *Session) Lock(ctx context.Context, id int64) error { return s.in.be.lock(ctx, s, id) }

// Commit ends the transaction; a COMMIT that Postgres turned into a ROLLBACK (the transaction
// had failed) is an error, since the caller believed its work was kept.
func (s *Session) Commit(ctx context.Context) error {
	open := !s.conn.IsClosed()
	tag, err := s.conn.Exec(ctx, "COMMIT")
	if err == nil && tag.String() == "ROLLBACK" {
		return ErrRolledBack
	}
	return lostAfterSend(open, err)
}

// ErrRolledBack is a COMMIT that Postgres answered with ROLLBACK: the transaction had failed.
var ErrRolledBack = errors.New("COMMIT rolled back: the transaction had failed")

func (s *Session) Rollback(ctx context.Context) error {
	_, err := s.conn.Exec(ctx, "ROLLBACK")
	return err
}

// Sleep runs pg_sleep in the session (a locker parks in it so it can be cancelled mid-statement).
func (s *Session) Sleep(ctx context.Context, d time.Duration) error {
	_, err := s.conn.Exec(ctx, "SELECT pg_sleep($1)", d.Seconds())
	return err
}
