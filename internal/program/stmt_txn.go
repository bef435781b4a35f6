package program

import (
	"context"
	"fmt"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// The statements a session sends besides the queue's: a locker's row lock, the transaction
// boundaries, and the pause a cancelled session sleeps in.

// LockStmt row-locks a job in the session's open transaction (lock.sql), as the seed's
// manual-locker does.
type LockStmt struct{ Job int64 }

func (LockStmt) Name() string      { return "lock" }
func (LockStmt) File() string      { return sut.FileLock }
func (st LockStmt) String() string { return fmt.Sprintf("lock job %d", st.Job) }
func (st LockStmt) Exec(ctx context.Context, s *sut.Session) Result {
	return Result{Err: s.Lock(ctx, st.Job)}
}
func (st LockStmt) Answer(r Result) string {
	a, _ := errAnswer(r)
	return a
}
func (st LockStmt) Judge(m *model.Queue, _ *Session, r Result, _ model.Window) error {
	if r.Err != nil {
		return QueueError(r.Err)
	}
	m.Lock(st.Job)
	return nil
}
func (st LockStmt) Apply(_ *World, s *Session, r Result, _ model.Window) {
	if r.Err != nil {
		s.StatementFailed()
		return
	}
	s.Locks = append(s.Locks, st.Job)
}
func (st LockStmt) Record(h Recording, r Result) {
	if r.Err != nil {
		h.Aborted()
		return
	}
	h.Locked(st.Job)
	h.Read(model.Input{Kind: model.OpLock, Job: st.Job}, model.Output{})
}

// BeginStmt opens a transaction.
type BeginStmt struct{ harnessStmt }

func (BeginStmt) Name() string      { return "begin" }
func (st BeginStmt) String() string { return st.Name() }
func (BeginStmt) Exec(ctx context.Context, s *sut.Session) Result {
	return Result{Err: s.Begin(ctx)}
}
func (st BeginStmt) Judge(_ *model.Queue, s *Session, r Result, _ model.Window) error {
	if r.Err != nil {
		return harnessFailure(s, st, r.Err)
	}
	return nil
}
func (BeginStmt) Apply(_ *World, s *Session, r Result, _ model.Window) {
	if r.Err == nil {
		s.InTxn = true
	}
}
func (BeginStmt) Record(h Recording, r Result) {
	if r.Err == nil {
		h.Begin()
	}
}

// EndStmt ends the session's transaction: COMMIT (Commit) or ROLLBACK. Either way the
// transaction is over, and with it its row locks; a failed COMMIT rolled back.
type EndStmt struct {
	harnessStmt
	Commit bool
}

// CommitStmt and RollbackStmt are the two ends of a transaction.
var (
	CommitStmt   = EndStmt{Commit: true}
	RollbackStmt = EndStmt{}
)

func (st EndStmt) Name() string {
	if st.Commit {
		return "commit"
	}
	return "rollback"
}
func (st EndStmt) String() string { return st.Name() }
func (st EndStmt) Exec(ctx context.Context, s *sut.Session) Result {
	if st.Commit {
		return Result{Err: s.Commit(ctx)}
	}
	return Result{Err: s.Rollback(ctx)}
}
func (st EndStmt) Judge(m *model.Queue, s *Session, r Result, _ model.Window) error {
	if r.Err != nil {
		return harnessFailure(s, st, r.Err)
	}
	for _, id := range s.Locks {
		m.Unlock(id)
	}
	return nil
}
func (EndStmt) Apply(_ *World, s *Session, _ Result, _ model.Window) { s.EndTxn() }
func (st EndStmt) Record(h Recording, r Result)                      { h.End(st.Commit, r.Err) }

// SleepStmt parks the session in pg_sleep, so that an interrupt has a statement to end.
type SleepStmt struct {
	harnessStmt
	D time.Duration
}

func (SleepStmt) Name() string      { return "sleep" }
func (st SleepStmt) String() string { return fmt.Sprintf("sleep %v", st.D) }
func (st SleepStmt) Exec(ctx context.Context, s *sut.Session) Result {
	return Result{Err: s.Sleep(ctx, st.D)}
}
func (st SleepStmt) Judge(_ *model.Queue, s *Session, r Result, _ model.Window) error {
	if r.Err != nil {
		return harnessFailure(s, st, r.Err)
	}
	return nil
}
func (SleepStmt) Apply(_ *World, s *Session, r Result, _ model.Window) {
	if r.Err != nil {
		s.StatementFailed()
	}
}
