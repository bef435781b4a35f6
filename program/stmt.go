package program

import (
	"context"
	"fmt"
	"strings"
	"time"

	"pgqcheck/model"
	"pgqcheck/sut"
)

// Kind is what a statement does. The queue's own statements carry the contract's names; the
// rest are the transaction boundaries and the pause a cancelled locker sleeps in.
type Kind string

const (
	KEnqueue  Kind = "enqueue"
	KClaim    Kind = "claim"
	KComplete Kind = "complete"
	KExpire   Kind = "expire"
	KSnapshot Kind = "snapshot"
	KLock     Kind = "lock"
	KBegin    Kind = "begin"
	KCommit   Kind = "commit"
	KRollback Kind = "rollback"
	KSleep    Kind = "sleep"
	KRescue   Kind = "rescue"
)

// Stmt is one statement a session sends, with every reference resolved: the only thing the
// modes hand to Postgres. Sequential programs, scheduled interleavings, stress traffic and the
// drain all run their operations as Stmts through Exec.
type Stmt struct {
	Kind    Kind
	Job     int64         // complete, expire, lock
	Gen     int64         // complete
	Payload string        // enqueue
	Lease   time.Duration // claim
	Worker  string        // claim: the worker's name, where claim.sql takes it
	Sleep   time.Duration // sleep
}

// Result is what came back. Out holds the answer in the form a history records it; Clock
// the database time the queue's statement ran in (zero for the harness's own statements).
type Result struct {
	Out   model.Output
	Rows  []model.Row // snapshot
	Jobs  []int64     // rescue: the jobs it made ready
	Clock sut.Clock
	Err   error
}

// Exec sends the statement on s and waits for its answer. It touches nothing but s, so a
// scheduler may run it on a goroutine of its own.
func (st Stmt) Exec(ctx context.Context, s *sut.Session) Result {
	switch st.Kind {
	case KEnqueue:
		id, clk, err := s.Enqueue(ctx, st.Payload)
		return Result{Out: model.Output{Job: id}, Clock: clk, Err: err}
	case KClaim:
		if st.Worker != "" {
			s.Worker = st.Worker
		}
		id, gen, ok, clk, err := s.Claim(ctx, st.Lease)
		return Result{Out: model.Output{Found: ok, Job: id, Gen: gen}, Clock: clk, Err: err}
	case KComplete:
		n, clk, err := s.Complete(ctx, st.Job, st.Gen)
		return Result{Out: model.Output{Rows: n}, Clock: clk, Err: err}
	case KExpire:
		clk, err := s.Expire(ctx, st.Job)
		return Result{Clock: clk, Err: err}
	case KSnapshot:
		rows, clk, err := s.Snapshot(ctx)
		return Result{Rows: rows, Clock: clk, Err: err}
	case KRescue:
		ids, clk, err := s.Rescue(ctx)
		return Result{Jobs: ids, Clock: clk, Err: err}
	case KLock:
		return Result{Err: s.Lock(ctx, st.Job)}
	case KBegin:
		return Result{Err: s.Begin(ctx)}
	case KCommit:
		return Result{Err: s.Commit(ctx)}
	case KRollback:
		return Result{Err: s.Rollback(ctx)}
	case KSleep:
		return Result{Err: s.Sleep(ctx, st.Sleep)}
	}
	return Result{Err: fmt.Errorf("unknown statement %q", st.Kind)}
}

// TimedLease reports whether a claim's lease is one of its own length, which ends by itself
// within a run (the long lease, or none given, outlives it).
func TimedLease(d time.Duration) bool { return d != 0 && d != LongLease }

// Timed reports whether the statement is a claim with a lease that ends by itself.
func (st Stmt) Timed() bool { return st.Kind == KClaim && TimedLease(st.Lease) }

// Input is the statement as a history records what was asked (the queue's own statements).
func (st Stmt) Input() model.Input {
	switch st.Kind {
	case KEnqueue:
		return model.Input{Kind: model.OpEnqueue, Payload: st.Payload}
	case KClaim:
		return model.Input{Kind: model.OpClaim, Lease: st.Lease}
	case KComplete:
		return model.Input{Kind: model.OpComplete, Job: st.Job, Gen: st.Gen}
	case KExpire:
		return model.Input{Kind: model.OpExpire, Job: st.Job}
	case KLock:
		return model.Input{Kind: model.OpLock, Job: st.Job}
	case KRescue:
		return model.Input{Kind: model.OpRescue}
	}
	return model.Input{}
}

// OpKind is the statement's operation kind in a history ("" for transaction boundaries).
func (st Stmt) OpKind() model.OpKind {
	switch st.Kind {
	case KSnapshot:
		return model.OpObserve
	case KBegin, KCommit, KRollback, KSleep:
		return ""
	}
	return st.Input().Kind
}

// String is the statement with its references resolved, for traces.
func (st Stmt) String() string {
	switch st.Kind {
	case KClaim:
		return "claim"
	case KComplete:
		return fmt.Sprintf("complete job %d gen %d", st.Job, st.Gen)
	case KExpire:
		return fmt.Sprintf("expire job %d", st.Job)
	case KLock:
		return fmt.Sprintf("lock job %d", st.Job)
	case KSleep:
		return fmt.Sprintf("sleep %v", st.Sleep)
	}
	return string(st.Kind)
}

// Answer is a result in words, for traces.
func (st Stmt) Answer(r Result) string {
	if r.Err != nil {
		return "error: " + oneLine(r.Err)
	}
	switch st.Kind {
	case KEnqueue:
		return fmt.Sprintf("id %d", r.Out.Job)
	case KClaim:
		if !r.Out.Found {
			return "none"
		}
		return Token{ID: r.Out.Job, Gen: r.Out.Gen}.String()
	case KComplete:
		if r.Out.Rows == 1 {
			return fmt.Sprintf("job %d gen %d: 1 row", st.Job, st.Gen)
		}
		return fmt.Sprintf("job %d gen %d: %d rows", st.Job, st.Gen, r.Out.Rows)
	case KSnapshot:
		return fmt.Sprint(r.Rows)
	case KRescue:
		if len(r.Jobs) == 0 {
			return "none"
		}
		return "jobs " + strings.Trim(fmt.Sprint(r.Jobs), "[]") + " ready"
	}
	return ""
}
