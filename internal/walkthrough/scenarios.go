package walkthrough

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/pgerr"
	"github.com/pgqcheck/pgqcheck/sut"
)

// The harness's own statements, recorded in the evidence as run. waitSQL is what
// Installed.WaitFor polls; seedWaitSQL is the seed's own readiness check, which the harness runs
// once the wait is over as a literal confirmation (narrowed to this database, since several
// runs may share a server).
const (
	waitSQL      = `SELECT count(*) FROM pg_stat_activity WHERE pid=$1 AND wait_event=$2`
	goneSQL      = `SELECT count(*) FROM pg_stat_activity WHERE pid=$1`
	seedWaitSQL  = `SELECT count(*) FROM pg_stat_activity WHERE application_name='manual-locker' AND wait_event='PgSleep' AND datname=current_database()`
	waitEventSQL = `SELECT coalesce(wait_event, '') FROM pg_stat_activity WHERE pid=$1`
	stateSQL     = `SELECT state FROM pg_stat_activity WHERE pid=$1`
	cancelSQL    = `SELECT pg_cancel_backend($1)`
	terminateSQL = `SELECT pg_terminate_backend($1)`
)

// A locker that is ended from outside sleeps far longer than any run takes.
const untilEnded = 10 * time.Minute

func seedScenario(ctx context.Context, l *lab) error {
	lab, err := l.session(ctx, "lab")
	if err != nil {
		return err
	}
	if err := l.enqueueBoth(ctx, lab); err != nil {
		return err
	}
	lk, err := l.lock(ctx, l.id1, l.o.LockerSleep)
	if err != nil {
		return err
	}
	defer lk.stop(ctx)

	r := l.claim(ctx, lab, "claim while job 1 is locked")
	l.assert(AssertSkipLocked, fmt.Sprintf("%d|1", l.id2), r)
	// The skip proves something only if the lock was still held when the claim returned.
	w := l.exec(ctx, "harness", l.in.Admin(), waitEventSQL, int32(lk.s.PID))
	l.assert("the locker was still sleeping with job 1 locked when that claim returned", "PgSleep", outOrErr(w))

	// The seed's `wait "$locker"`: pg_sleep runs out, then the locker rolls back.
	if sr := <-lk.done; sr.err != nil {
		return fmt.Errorf("pgqcheck: the locker's pg_sleep failed: %s", errText(sr.err))
	}
	lk.ended = true
	if r := l.exec(ctx, LockerName, lk.s.Conn(), "ROLLBACK"); r.err != nil {
		return fmt.Errorf("pgqcheck: the locker's ROLLBACK failed: %s", errText(r.err))
	}

	l.assert(AssertAfterRelease, fmt.Sprintf("%d|1", l.id1), l.claim(ctx, lab, ""))
	if r := l.exec(ctx, "lab", lab.Conn(), l.in.Queue.Expire, l.id1); r.err != nil {
		return fmt.Errorf("pgqcheck: expire.sql failed: %s", errText(r.err))
	}
	l.assert(AssertReclaim, fmt.Sprintf("%d|2", l.id1), l.claim(ctx, lab, ""))
	l.assert(AssertStaleFenced, "0", outOrErr(l.exec(ctx, "lab", lab.Conn(), l.in.Queue.Complete, l.id1, int64(1))))
	l.assert(AssertCurrentWins, "1", outOrErr(l.exec(ctx, "lab", lab.Conn(), l.in.Queue.Complete, l.id1, int64(2))))
	return nil
}

func cancelScenario(ctx context.Context, l *lab) error {
	lab, lk, err := l.lockedFirst(ctx)
	if err != nil {
		return err
	}
	defer lk.stop(ctx)
	pid := int32(lk.s.PID)
	l.assert("pg_cancel_backend signals the locker", "t", outOrErr(l.exec(ctx, "harness", l.in.Admin(), cancelSQL, pid)))
	sr := <-lk.done
	lk.ended = true
	l.assert("the locker's pg_sleep is cancelled (query_canceled)", "57014", pgerr.Code(sr.err))

	// Postgres reports the error before it aborts the transaction and sends ReadyForQuery only
	// after; the client's transaction status comes from that ReadyForQuery, so "E" here also
	// proves the abort (and whatever it released) is complete before the next claim runs.
	l.assert(AssertAbortedOpen, "E", string(lk.s.Conn().PgConn().TxStatus()))
	l.assert("the server shows the locker idle in an aborted transaction", "idle in transaction (aborted)",
		outOrErr(l.exec(ctx, "harness", l.in.Admin(), stateSQL, pid)))
	l.assert(AssertAfterRelease, fmt.Sprintf("%d|1", l.id1), l.claim(ctx, lab, ""))
	l.assert("the locker's transaction block is still open: its next statement fails (in_failed_sql_transaction)", "25P02",
		pgerr.Code(l.exec(ctx, LockerName, lk.s.Conn(), "SELECT 1").err))
	if r := l.exec(ctx, LockerName, lk.s.Conn(), "ROLLBACK"); r.err != nil {
		return fmt.Errorf("pgqcheck: the locker's ROLLBACK after the cancel failed: %s", errText(r.err))
	}
	l.note("pg_cancel_backend ended the locker's statement and thereby aborted its transaction. The transaction block stayed open on the client (status E; further statements failed with 25P02 until ROLLBACK), but Postgres released job %d's row lock when it aborted the transaction, before the client rolled back: the next claim returned the job while the locker was still idle in the aborted transaction. The lock therefore lasts until the transaction ends or aborts, whichever comes first, not until the client's ROLLBACK.", l.id1)
	return nil
}

func terminateScenario(ctx context.Context, l *lab) error {
	lab, lk, err := l.lockedFirst(ctx)
	if err != nil {
		return err
	}
	defer lk.stop(ctx)
	pid := lk.s.PID
	l.assert("pg_terminate_backend signals the locker", "t", outOrErr(l.exec(ctx, "harness", l.in.Admin(), terminateSQL, int32(pid))))
	// The backend exits asynchronously and its locks go only when it is gone.
	begin := time.Now()
	err = l.in.WaitGone(ctx, pid)
	l.record("harness", goneSQL+" -- polled until 0", []any{int32(pid)}, begin, result{out: "0", err: err})
	if err != nil {
		return err
	}
	sr := <-lk.done
	lk.ended = true
	l.assert("the locker's statement ends with its backend", "error", map[bool]string{true: "error", false: "no error"}[sr.err != nil])
	l.assert(AssertAfterRelease, fmt.Sprintf("%d|1", l.id1), l.claim(ctx, lab, ""))
	l.note("pg_terminate_backend ended the locker's backend; once it had left pg_stat_activity (%s) job %d's row lock was gone and a claim returned the job.", time.Since(begin).Round(time.Millisecond), l.id1)
	return nil
}

// lockedFirst sets the scene of the release scenarios: the seed's two jobs, a locker holding
// the first in its sleep, and a claim that skips it. The caller stops the locker.
func (l *lab) lockedFirst(ctx context.Context) (*sut.Session, *locker, error) {
	lab, err := l.session(ctx, "lab")
	if err != nil {
		return nil, nil, err
	}
	if err := l.enqueueBoth(ctx, lab); err != nil {
		return nil, nil, err
	}
	lk, err := l.lock(ctx, l.id1, untilEnded)
	if err != nil {
		return nil, nil, err
	}
	l.assert(AssertSkipLocked, fmt.Sprintf("%d|1", l.id2), l.claim(ctx, lab, ""))
	return lab, lk, nil
}

// enqueueBoth adds the seed's two jobs and remembers their ids.
func (l *lab) enqueueBoth(ctx context.Context, s *sut.Session) error {
	for i, p := range []string{Payload1, Payload2} {
		r := l.exec(ctx, "lab", s.Conn(), l.in.Queue.Enqueue, l.enqueueArgs(p)...)
		if r.err != nil {
			return fmt.Errorf("pgqcheck: enqueue.sql failed: %s", errText(r.err))
		}
		id, err := strconv.ParseInt(r.out, 10, 64)
		if err != nil {
			return fmt.Errorf("pgqcheck: enqueue.sql returned %q, not one id", r.out)
		}
		if i == 0 {
			l.id1 = id
		} else {
			l.id2 = id
		}
	}
	return nil
}

// claim runs claim.sql with the seed's lease and returns its output (or error) as text.
func (l *lab) claim(ctx context.Context, s *sut.Session, timing string) string {
	begin := time.Now()
	r := l.exec(ctx, "lab", s.Conn(), l.in.Queue.Claim, Lease)
	if timing != "" {
		l.timing(timing, time.Since(begin))
	}
	return outOrErr(r)
}

func outOrErr(r result) string {
	if r.err != nil {
		return "error: " + errText(r.err)
	}
	return r.out
}

// locker is the seed's manual-locker: a session holding one job's row lock in an open
// transaction while it sleeps in pg_sleep.
type locker struct {
	l     *lab
	s     *sut.Session
	done  chan result // pg_sleep's outcome
	ended bool        // done has been received
}

// lock starts a locker on job id sleeping for sleep, and returns once pg_stat_activity shows it
// sleeping: the ordering is observed, not guessed.
func (l *lab) lock(ctx context.Context, id int64, sleep time.Duration) (*locker, error) {
	s, err := l.session(ctx, "locker")
	if err != nil {
		return nil, err
	}
	c := s.Conn()
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{"SET application_name = '" + LockerName + "'", nil},
		{"BEGIN", nil},
		{l.in.Queue.Lock, []any{id}},
	} {
		if r := l.exec(ctx, LockerName, c, st.sql, st.args...); r.err != nil {
			return nil, fmt.Errorf("pgqcheck: the locker's %s failed: %s", brief(st.sql, nil), errText(r.err))
		}
	}
	lk := &locker{l: l, s: s, done: make(chan result, 1)}
	sleepSQL := fmt.Sprintf("SELECT pg_sleep(%g)", sleep.Seconds())
	go func() { lk.done <- l.exec(ctx, LockerName, c, sleepSQL) }()

	begin := time.Now()
	err = l.in.WaitFor(ctx, s.PID, "PgSleep")
	l.record("harness", waitSQL+" -- polled until 1", []any{int32(s.PID), "PgSleep"}, begin, result{out: "1", err: err})
	if err != nil {
		lk.stop(ctx)
		return nil, fmt.Errorf("pgqcheck: %v", err)
	}
	l.assert("the manual-locker session sleeps in pg_sleep holding the lock", "1", outOrErr(l.exec(ctx, "harness", l.in.Admin(), seedWaitSQL)))
	return lk, nil
}

// stop ends a locker that is still sleeping (a scenario that failed part-way), so its goroutine
// is finished before the session is closed.
func (lk *locker) stop(ctx context.Context) {
	if lk.ended {
		return
	}
	_, _ = lk.l.in.Admin().Exec(context.WithoutCancel(ctx), cancelSQL, int32(lk.s.PID))
	<-lk.done
	lk.ended = true
}
