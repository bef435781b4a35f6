package sut

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"pgqcheck/internal/textfmt"
	"pgqcheck/model"
)

// Session is one connection to the queue's database: a worker, a locker, or a snapshot reader.
type Session struct {
	Name string
	PID  uint32
	conn *pgx.Conn
	q    *Queue

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
	s := &Session{Name: name, PID: c.PgConn().PID(), conn: c, q: in.Queue}
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
	r, clk, err := s.timed(ctx, FileEnqueue, s.q.Enqueue, payload)
	var id int64
	if err == nil {
		err = s.one(r, &id)
	}
	return id, clk, stmtErr(FileEnqueue, err)
}

// Claim asks for a job with the given lease length. ok is false when the queue returned no row.
func (s *Session) Claim(ctx context.Context, lease time.Duration) (id, gen int64, ok bool, clk Clock, err error) {
	r, clk, err := s.timed(ctx, FileClaim, s.q.Claim, lease)
	if err != nil {
		return 0, 0, false, clk, stmtErr(FileClaim, err)
	}
	got := make([][2]int64, len(r.rows))
	for i := range r.rows {
		if err := s.scan(r, i, &got[i][0], &got[i][1]); err != nil {
			return 0, 0, false, clk, stmtErr(FileClaim, err)
		}
	}
	switch len(got) {
	case 0:
		return 0, 0, false, clk, nil
	case 1:
		return got[0][0], got[0][1], true, clk, nil
	}
	return 0, 0, false, clk, &ErrMultipleRows{got}
}

// Complete presents (id, generation) and returns how many rows the queue says it completed.
func (s *Session) Complete(ctx context.Context, id, gen int64) (int64, Clock, error) {
	r, clk, err := s.timed(ctx, FileComplete, s.q.Complete, id, gen)
	var n int64
	if err == nil {
		err = s.one(r, &n)
	}
	return n, clk, stmtErr(FileComplete, err)
}

// Expire runs the test hook that moves a job's lease into the past.
func (s *Session) Expire(ctx context.Context, id int64) (Clock, error) {
	_, clk, err := s.timed(ctx, FileExpire, s.q.Expire, id)
	return clk, stmtErr(FileExpire, err)
}

// Snapshot reads every job.
func (s *Session) Snapshot(ctx context.Context) ([]model.Row, Clock, error) {
	r, clk, err := s.timed(ctx, FileSnapshot, s.q.Snapshot)
	if err != nil {
		return nil, clk, stmtErr(FileSnapshot, err)
	}
	out := make([]model.Row, len(r.rows))
	for i := range r.rows {
		var state string
		if err := s.scan(r, i, &out[i].ID, &state, &out[i].Generation, &out[i].LeaseLive); err != nil {
			return nil, clk, stmtErr(FileSnapshot, err)
		}
		out[i].State = model.State(state)
	}
	return out, clk, nil
}

// one decodes a statement that returns exactly one row.
func (s *Session) one(r result, dst ...any) error {
	if len(r.rows) != 1 {
		return fmt.Errorf("returned %d rows, want exactly one", len(r.rows))
	}
	return s.scan(r, 0, dst...)
}

// CanLock reports whether the queue ships lock.sql, without which lockers cannot run.
func (s *Session) CanLock() bool { return s.q.Lock != "" }

// Begin, Lock, Commit and Rollback drive a locker: a session that holds a job's row lock in an
// open transaction, as the seed's manual-locker does.
func (s *Session) Begin(ctx context.Context) error {
	_, err := s.conn.Exec(ctx, "BEGIN")
	return err
}

func (s *Session) Lock(ctx context.Context, id int64) error {
	if s.q.Lock == "" {
		return fmt.Errorf("queue %s has no lock.sql", s.q.Source)
	}
	rows, err := s.conn.Query(ctx, s.q.Lock, id)
	if err != nil {
		return stmtErr(FileLock, err)
	}
	rows.Close()
	return stmtErr(FileLock, rows.Err())
}

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

// DBNow is the database clock, clock_timestamp().
func (s *Session) DBNow(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := s.conn.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t)
	return t, err
}
