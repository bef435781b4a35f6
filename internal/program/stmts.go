package program

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// The queue's own statements, one type each: the contract's files.

// EnqueueStmt adds a job with a payload.
type EnqueueStmt struct{ Payload string }

func (EnqueueStmt) Name() string      { return "enqueue" }
func (EnqueueStmt) File() string      { return sut.FileEnqueue }
func (st EnqueueStmt) String() string { return st.Name() }
func (st EnqueueStmt) Exec(ctx context.Context, s *sut.Session) Result {
	id, clk, err := s.Enqueue(ctx, st.Payload)
	return Result{Out: model.Output{Job: id}, Clock: clk, Err: err}
}
func (st EnqueueStmt) Answer(r Result) string {
	if a, failed := errAnswer(r); failed {
		return a
	}
	return fmt.Sprintf("id %d", r.Out.Job)
}
func (st EnqueueStmt) input() model.Input {
	return model.Input{Kind: model.OpEnqueue, Payload: st.Payload}
}
func (st EnqueueStmt) Judge(m *model.Queue, _ *Session, r Result, _ model.Window) error {
	if r.Err != nil {
		return QueueError(r.Err)
	}
	return m.Enqueue(r.Out.Job)
}
func (st EnqueueStmt) Apply(w *World, s *Session, r Result, _ model.Window) {
	if r.Err != nil {
		s.StatementFailed()
		return
	}
	w.Jobs = append(w.Jobs, r.Out.Job)
}
func (st EnqueueStmt) Record(h Recording, r Result) { WriteOrFail(h, st.input(), r) }

// WriteOrFail records a statement that changes the queue: its answer, or its failure.
func WriteOrFail(h Recording, in model.Input, r Result) {
	if r.Err != nil {
		h.Failed(in, r.Err)
		return
	}
	h.Write(in, r.Out)
}

// ClaimStmt asks for a job with a lease, for the named worker (where claim.sql takes one).
// Strict marks a claim issued while no other session could hold a row lock or claim
// concurrently: an empty answer to it must be justified (see model.Input).
type ClaimStmt struct {
	Lease  time.Duration
	Worker string
	Strict bool
	Owns   bool // the lease is the worker's, which a history then records
}

func (ClaimStmt) Name() string      { return "claim" }
func (ClaimStmt) File() string      { return sut.FileClaim }
func (st ClaimStmt) String() string { return st.Name() }
func (st ClaimStmt) Exec(ctx context.Context, s *sut.Session) Result {
	if st.Worker != "" {
		s.Worker = st.Worker
	}
	id, gen, ok, clk, err := s.Claim(ctx, st.Lease)
	return Result{Out: model.Output{Found: ok, Job: id, Gen: gen}, Clock: clk, Err: err}
}
func (st ClaimStmt) Answer(r Result) string {
	if a, failed := errAnswer(r); failed {
		return a
	}
	if !r.Out.Found {
		return "none"
	}
	return Token{ID: r.Out.Job, Gen: r.Out.Gen}.String()
}

// Timed: a lease of its own length ends by itself within a run (the long lease, or none
// given, outlives it).
func (st ClaimStmt) Timed() bool { return TimedLease(st.Lease) }

// SkipsLocked: a claim skips rows other sessions hold locked; it never waits for them.
func (ClaimStmt) SkipsLocked() bool { return true }

func (st ClaimStmt) Judge(m *model.Queue, _ *Session, r Result, at model.Window) error {
	if r.Err != nil {
		return lockWaitOr(st, r.Err)
	}
	return m.ClaimFor(at, st.Lease, r.Out.Found, r.Out.Job, r.Out.Gen, st.Worker)
}
func (st ClaimStmt) Apply(w *World, s *Session, r Result, at model.Window) {
	if r.Err != nil {
		s.StatementFailed()
		return
	}
	if r.Out.Found {
		w.saw(r.Out.Job)
		s.HoldsClaimTxn = w.TxBound
		t := Token{ID: r.Out.Job, Gen: r.Out.Gen, Lease: st.Lease, Until: at.Shift(st.Lease)}
		s.Tokens = append(s.Tokens, t)
		w.Claims = append(w.Claims, t)
		s.Claimed = s.Claimed || s.InTxn
	}
}
func (st ClaimStmt) Record(h Recording, r Result) {
	in := model.Input{Kind: model.OpClaim, Lease: st.Lease, Strict: st.Strict}
	if st.Owns {
		in.Worker = st.Worker
	}
	switch {
	case r.Err != nil:
		h.Failed(in, r.Err)
	case r.Out.Found:
		h.Claimed(r.Out.Job, r.Out.Gen)
		h.Write(in, r.Out)
	default:
		h.Read(in, r.Out) // an empty claim changes nothing, whatever its transaction does
	}
}

// lockWaitOr judges the failure of a statement that must skip locked rows: a lock_timeout is
// a wait for a row lock, property 5, as in every mode; any other failure is what QueueError
// says.
func lockWaitOr(st Stmt, err error) error {
	var se *sut.StatementError
	if errors.As(err, &se) && se.LockWait() {
		return model.Violate(model.PSkipLocked, "%s waited for a row lock another session holds instead of skipping the row (lock_timeout, SQLSTATE 55P03)", st.Name())
	}
	return QueueError(err)
}

// Strictly returns st marked as issued while no other session could race it, where that
// changes what its answer means (a claim's); ok is false where it does not.
func Strictly(st Stmt) (Stmt, bool) {
	c, ok := st.(ClaimStmt)
	if !ok {
		return st, false
	}
	c.Strict = true
	return c, true
}

// CompleteStmt presents a claim's token.
type CompleteStmt struct{ Job, Gen int64 }

func (CompleteStmt) Name() string { return "complete" }
func (CompleteStmt) File() string { return sut.FileComplete }
func (st CompleteStmt) String() string {
	return fmt.Sprintf("complete job %d gen %d", st.Job, st.Gen)
}
func (st CompleteStmt) Exec(ctx context.Context, s *sut.Session) Result {
	n, clk, err := s.Complete(ctx, st.Job, st.Gen)
	return Result{Out: model.Output{Rows: n}, Clock: clk, Err: err}
}
func (st CompleteStmt) Answer(r Result) string {
	if a, failed := errAnswer(r); failed {
		return a
	}
	if r.Out.Rows == 1 {
		return fmt.Sprintf("job %d gen %d: 1 row", st.Job, st.Gen)
	}
	return fmt.Sprintf("job %d gen %d: %d rows", st.Job, st.Gen, r.Out.Rows)
}
func (st CompleteStmt) Judge(m *model.Queue, _ *Session, r Result, at model.Window) error {
	if r.Err != nil {
		return QueueError(r.Err)
	}
	return m.Complete(at, st.Job, st.Gen, r.Out.Rows)
}
func (st CompleteStmt) Apply(w *World, s *Session, r Result, _ model.Window) {
	switch {
	case r.Err != nil:
		s.StatementFailed()
	case w.TxBound && r.Out.Rows == 1:
		s.HoldsClaimTxn = false
	}
	s.Accepted = s.InTxn && r.Err == nil && r.Out.Rows == 1
}
func (st CompleteStmt) Record(h Recording, r Result) {
	if r.Err == nil && r.Out.Rows == 1 {
		h.Completed(st.Job)
	}
	WriteOrFail(h, model.Input{Kind: model.OpComplete, Job: st.Job, Gen: st.Gen}, r)
}

// ExpireStmt runs the test hook that moves a job's lease into the past.
type ExpireStmt struct{ Job int64 }

func (ExpireStmt) Name() string      { return "expire" }
func (ExpireStmt) File() string      { return sut.FileExpire }
func (st ExpireStmt) String() string { return fmt.Sprintf("expire job %d", st.Job) }
func (st ExpireStmt) Exec(ctx context.Context, s *sut.Session) Result {
	clk, err := s.Expire(ctx, st.Job)
	return Result{Clock: clk, Err: err}
}
func (st ExpireStmt) Answer(r Result) string {
	a, _ := errAnswer(r)
	return a
}
func (st ExpireStmt) Judge(m *model.Queue, _ *Session, r Result, at model.Window) error {
	if r.Err != nil {
		return QueueError(r.Err)
	}
	m.Expire(at, st.Job)
	return nil
}

// Apply: on a queue whose claims hold a transaction, the lease was its holder's transaction,
// which the expiry ended with the holder's backend.
func (st ExpireStmt) Apply(w *World, s *Session, r Result, _ model.Window) {
	if r.Err != nil {
		s.StatementFailed()
		return
	}
	for _, o := range w.Sessions {
		if t, ok := o.Newest(0); ok && o.HoldsClaimTxn && t.ID == st.Job {
			o.HoldsClaimTxn = false
		}
	}
	w.BackendsEnded = w.BackendsEnded || w.TxBound
}
func (st ExpireStmt) Record(h Recording, r Result) {
	WriteOrFail(h, model.Input{Kind: model.OpExpire, Job: st.Job}, r)
}

// SnapshotStmt reads every job's row. Known holds the ids known to exist before it was sent
// (those whose enqueue returned, and the strays seen since), Omit the rows a history leaves
// out (they are then not absent either): a concurrent history records an observation per job.
type SnapshotStmt struct {
	Known []int64
	Omit  func(model.Row) bool
}

func (SnapshotStmt) Name() string      { return "snapshot" }
func (SnapshotStmt) File() string      { return sut.FileSnapshot }
func (st SnapshotStmt) String() string { return st.Name() }
func (st SnapshotStmt) Exec(ctx context.Context, s *sut.Session) Result {
	rows, clk, err := s.Snapshot(ctx)
	return Result{Rows: rows, Clock: clk, Err: err}
}
func (st SnapshotStmt) Answer(r Result) string {
	if a, failed := errAnswer(r); failed {
		return a
	}
	return fmt.Sprint(r.Rows)
}
func (st SnapshotStmt) Judge(m *model.Queue, _ *Session, r Result, at model.Window) error {
	if r.Err != nil {
		return QueueError(r.Err)
	}
	return m.CheckSnapshot(at, r.Rows)
}
func (st SnapshotStmt) Apply(w *World, s *Session, r Result, _ model.Window) {
	if r.Err != nil {
		s.StatementFailed()
		return
	}
	for _, row := range r.Rows {
		w.saw(row.ID)
	}
}

// Record: one observation per job, every row it returned but those Omit leaves out, and an
// absence for each known id it did not return.
func (st SnapshotStmt) Record(h Recording, r Result) {
	if r.Err != nil {
		return
	}
	seen := map[int64]bool{}
	for _, row := range r.Rows {
		seen[row.ID] = true
		if st.Omit != nil && st.Omit(row) {
			continue
		}
		live := row.LeaseLive && row.State == model.Running
		h.Read(model.Input{Kind: model.OpObserve, Job: row.ID}, model.Output{Found: true, State: row.State, Gen: row.Generation, Live: live,
			Attempts: row.Attempts, Kept: row.Kept})
	}
	for _, id := range st.Known {
		if !seen[id] {
			seen[id] = true
			h.Read(model.Input{Kind: model.OpObserve, Job: id}, model.Output{})
		}
	}
}

// RescueStmt runs the queue's rescue step, which makes ready the running jobs whose lease ended.
type RescueStmt struct{}

func (RescueStmt) Name() string      { return "rescue" }
func (RescueStmt) File() string      { return sut.FileRescue }
func (st RescueStmt) String() string { return st.Name() }
func (st RescueStmt) Exec(ctx context.Context, s *sut.Session) Result {
	ids, clk, err := s.Rescue(ctx)
	return Result{Jobs: ids, Clock: clk, Err: err}
}
func (st RescueStmt) Answer(r Result) string {
	if a, failed := errAnswer(r); failed {
		return a
	}
	if len(r.Jobs) == 0 {
		return "none"
	}
	return "jobs " + strings.Trim(fmt.Sprint(r.Jobs), "[]") + " ready"
}

// SkipsLocked: a rescue, like a claim, takes jobs while other sessions may hold rows locked;
// it skips those rows and never waits for them.
func (RescueStmt) SkipsLocked() bool { return true }

func (st RescueStmt) Judge(m *model.Queue, _ *Session, r Result, at model.Window) error {
	if r.Err != nil {
		return lockWaitOr(st, r.Err)
	}
	return m.Rescue(at, r.Jobs)
}
func (st RescueStmt) Apply(w *World, s *Session, r Result, at model.Window) {
	if r.Err != nil {
		s.StatementFailed()
	}
	if w.Life.RescueBackoff && (len(r.Jobs) > 0 || r.Err != nil && at.To == model.Never) {
		w.DueAfter(at, w.Life.BackoffAfter(w.Life.MaxAttempts))
	}
}

// Record: one operation per job it made ready.
func (st RescueStmt) Record(h Recording, r Result) {
	in := model.Input{Kind: model.OpRescue}
	if r.Err != nil {
		h.Failed(in, r.Err)
		return
	}
	for _, id := range r.Jobs {
		h.Write(in, model.Output{Found: true, Job: id})
	}
}
