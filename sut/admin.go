package sut

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
)

// WaitFor polls pg_stat_activity until the backend pid shows the given wait event (for
// example "PgSleep"), so the harness knows a session reached a point instead of guessing a delay.
func (in *Installed) WaitFor(ctx context.Context, pid uint32, waitEvent string) error {
	return poll(ctx, fmt.Sprintf("backend %d to wait in %s", pid, waitEvent), func() (bool, error) {
		var n int
		err := in.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid=$1 AND wait_event=$2`, int32(pid), waitEvent).Scan(&n)
		return n == 1, err
	})
}

// WaitGone polls until backend pid has left pg_stat_activity (a terminated backend exits
// asynchronously; its locks are released only once it is gone).
func (in *Installed) WaitGone(ctx context.Context, pid uint32) error {
	return waitGone(ctx, in.admin, pid)
}

// WaitGone is Installed.WaitGone asked on the session's own connection, for a caller to whom the
// admin connection does not belong (in a stress run it is the chaos goroutine's).
func (s *Session) WaitGone(ctx context.Context, pid uint32) error {
	return waitGone(ctx, s.conn, pid)
}

func waitGone(ctx context.Context, c *pgx.Conn, pid uint32) error {
	return poll(ctx, fmt.Sprintf("backend %d to exit", pid), func() (bool, error) {
		var n int
		err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid=$1`, int32(pid)).Scan(&n)
		return n == 0, err
	})
}

// Blocked reports the pids holding locks that backend pid waits for (empty: not blocked).
func (in *Installed) Blocked(ctx context.Context, pid uint32) ([]int32, error) {
	var pids []int32
	err := in.admin.QueryRow(ctx, `SELECT pg_blocking_pids($1)`, int32(pid)).Scan(&pids)
	return pids, err
}

// Wait is what a backend waits for, as Postgres tells it: the wait event, and each backend that
// blocks it.
type Wait struct {
	Event    string // wait_event_type:wait_event, e.g. Lock:transactionid
	Blockers []Blocker
}

// Blocker is a backend another waits for: its session's name (application_name, pgqcheck-<name>
// for the suite's own), what it runs or ran last, its state, and how long its transaction has
// been open.
type Blocker struct {
	PID      uint32
	App      string
	State    string
	Query    string
	XactOpen time.Duration
}

// Session is the suite's session name of a blocker ("" when the backend is not the suite's).
func (b Blocker) Session() string {
	name, ok := strings.CutPrefix(b.App, "pgqcheck-")
	if !ok {
		return ""
	}
	return name
}

func (b Blocker) String() string {
	who := fmt.Sprintf("backend %d (application %q)", b.PID, b.App)
	if s := b.Session(); s != "" {
		who = fmt.Sprintf("%s (backend %d)", s, b.PID)
	}
	return fmt.Sprintf("%s, %s, its transaction open %v, running: %s", who, b.State, b.XactOpen.Round(time.Millisecond), textfmt.OneLine(b.Query))
}

// WaitOf says what backend pid waits for and who blocks it (no blockers: it waits for none).
func (in *Installed) WaitOf(ctx context.Context, pid uint32) (Wait, error) {
	var w Wait
	rows, err := in.admin.Query(ctx, `
SELECT coalesce(wa.wait_event_type || ':' || wa.wait_event, ''), b.pid, b.application_name, coalesce(b.state, ''),
       left(b.query, 300), coalesce(extract(epoch FROM clock_timestamp() - b.xact_start), 0)::float8
FROM pg_stat_activity wa
CROSS JOIN LATERAL unnest(pg_blocking_pids(wa.pid)) AS bp(pid)
JOIN pg_stat_activity b ON b.pid = bp.pid
WHERE wa.pid = $1`, int32(pid))
	if err != nil {
		return w, err
	}
	defer rows.Close()
	for rows.Next() {
		var b Blocker
		var bpid int32
		var open float64
		if err := rows.Scan(&w.Event, &bpid, &b.App, &b.State, &b.Query, &open); err != nil {
			return w, err
		}
		b.PID, b.XactOpen = uint32(bpid), time.Duration(open*float64(time.Second))
		w.Blockers = append(w.Blockers, b)
	}
	return w, rows.Err()
}

// Cancel cancels the statement backend pid runs (pg_cancel_backend).
func (in *Installed) Cancel(ctx context.Context, pid uint32) error {
	_, err := in.admin.Exec(ctx, `SELECT pg_cancel_backend($1)`, int32(pid))
	return err
}

// Terminate ends backend pid (pg_terminate_backend) and waits until it has exited.
func (in *Installed) Terminate(ctx context.Context, pid uint32) error {
	if _, err := in.admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, int32(pid)); err != nil {
		return err
	}
	return in.WaitGone(ctx, pid)
}

func poll(ctx context.Context, what string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		ok, err := done()
		if err != nil {
			return fmt.Errorf("waiting for %s: %s", what, textfmt.ErrLine(err))
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: gave up after 10s", what)
		case <-time.After(delay):
		}
	}
}

// CancelIdle cancels a session that is idle in its transaction, as the seed's cancellation
// while a candidate is locked: the session parks in pg_sleep, pg_cancel_backend interrupts it
// (Postgres aborts the transaction, releasing its locks), and the client rolls back.
func (in *Installed) CancelIdle(ctx context.Context, c *Session) error {
	done := make(chan error, 1)
	go func() { done <- c.Sleep(ctx, time.Hour) }()
	if err := in.WaitFor(ctx, c.PID, "PgSleep"); err != nil {
		_ = in.Cancel(ctx, c.PID)
		<-done
		return err
	}
	if err := in.Cancel(ctx, c.PID); err != nil {
		return err
	}
	if err := <-done; err == nil {
		return fmt.Errorf("pg_sleep was not cancelled")
	}
	return c.Rollback(ctx)
}

// Transaction names a backend's transaction: its pid and its transaction id (a pid alone may
// by now name another backend, pids being reused).
type Transaction struct {
	PID uint32
	XID string
}

// RunningTransactions lists the transactions with an id that the database's backends are in
// now. A Go queue whose claim holds a transaction open (the TxBound shape) keeps which
// transaction holds which job; a worker whose connection died does not tell it, and this is how
// it tells a live holder from a dead one.
func RunningTransactions(ctx context.Context, c *pgx.Conn) (map[Transaction]bool, error) {
	if c.PgConn().TxStatus() != 'I' {
		// Inside a transaction the statistics are read once and kept.
		if _, err := c.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			return nil, err
		}
	}
	rows, _ := c.Query(ctx, `SELECT pid, backend_xid::text FROM pg_stat_activity
		WHERE datname = current_database() AND backend_xid IS NOT NULL`)
	out := map[Transaction]bool{}
	var pid int32
	var xid string
	_, err := pgx.ForEachRow(rows, []any{&pid, &xid}, func() error {
		out[Transaction{PID: uint32(pid), XID: xid}] = true
		return nil
	})
	return out, err
}

// DropEnded removes from holders (job -> the claim holding it) each claim whose transaction is
// no longer running, tx naming a claim's transaction. A holder kept was in its transaction,
// holding its row, at an instant of the call.
func DropEnded[H any](ctx context.Context, c *pgx.Conn, holders map[int64]H, tx func(H) Transaction) error {
	running, err := RunningTransactions(ctx, c)
	if err != nil {
		return err
	}
	for id, h := range holders {
		if !running[tx(h)] {
			delete(holders, id)
		}
	}
	return nil
}
