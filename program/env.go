// Package program holds operation programs: small operations that print themselves and run
// themselves against the real queue and the model side by side, so that a failing sequence can
// be shown as a numbered list, saved, decoded from fuzz bytes and replayed.
package program

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"pgqcheck/model"
	"pgqcheck/sut"
)

// Lease lengths and pauses. The long lease outlives any run, so only expire and the short-lease
// operation end leases. The short lease and its pauses keep wide margins (the early completion
// lands within a few milliseconds of a 1 s lease; the late one 500 ms after it ran out), so the
// outcome never depends on scheduling noise and a run stays deterministic for shrinking.
const (
	LongLease     = time.Hour
	ShortLeaseLen = time.Second
	LatePause     = ShortLeaseLen + 500*time.Millisecond
	// EarlyBudget is how long an early completion may take after its claim before the run
	// reports timing noise rather than a verdict.
	EarlyBudget = ShortLeaseLen / 2
	// lockTimeout: in a sequential run nothing ever legitimately waits for a row lock, so any
	// wait is a finding (properties 5 and 9); a short timeout turns it into an error fast.
	lockTimeout = 20 * time.Millisecond
)

// The Prop suite's world: enough workers for one to hold a stale token while another reclaims,
// and lockers to hold two rows at once. A saved case (rapid fail file or program) replays only
// in the same world, so every runner of the state machine uses these.
const (
	Workers = 3
	Lockers = 2
)

// Token is what a claim hands a worker: the job and the generation it must present.
type Token struct{ ID, Gen int64 }

func (t Token) String() string { return fmt.Sprintf("job %d gen %d", t.ID, t.Gen) }

// Worker is a session that claims and completes. Tokens holds every claim it made, newest last;
// older ones are what a paused worker would still present after its job was reclaimed.
type Worker struct {
	S      *sut.Session
	Tokens []Token
}

// Locker is a session that holds one job's row lock in an open transaction.
type Locker struct {
	S   *sut.Session
	Job int64 // 0: not holding a lock
}

// Env is the world a program runs in: the installed queue, the model, the sessions, and the
// model clock. Sessions survive Reset so that a property run costs a TRUNCATE, not connections.
type Env struct {
	In      *sut.Installed
	Model   *model.Queue
	Now     time.Duration // model time: advances only by the pauses operations take
	Workers []*Worker
	Lockers []*Locker
	Reader  *sut.Session

	Trace []string // each executed step with the queue's answer
	Ops   []Op     // the operations behind Trace, for reducing and saving a failure
	// Counts accumulates what the steps exercised until the caller clears it (Reset does not).
	Counts Counts
	next   int     // payload counter: every job gets a unique payload
	step   answers // the current step's answers, for Counts
}

// NewEnv connects the sessions for a queue already installed.
func NewEnv(ctx context.Context, in *sut.Installed, workers, lockers int) (*Env, error) {
	e := &Env{In: in}
	var err error
	if e.Reader, err = e.connect(ctx, "reader"); err != nil {
		return nil, err
	}
	for i := 0; i < workers; i++ {
		s, err := e.connect(ctx, fmt.Sprintf("w%d", i))
		if err != nil {
			e.Close()
			return nil, err
		}
		e.Workers = append(e.Workers, &Worker{S: s})
	}
	for i := 0; i < lockers; i++ {
		s, err := e.connect(ctx, fmt.Sprintf("locker%d", i))
		if err != nil {
			e.Close()
			return nil, err
		}
		e.Lockers = append(e.Lockers, &Locker{S: s})
	}
	return e, e.Reset(ctx)
}

func (e *Env) connect(ctx context.Context, name string) (*sut.Session, error) {
	return e.In.Connect(ctx, name, sut.SessionOptions{LockTimeout: lockTimeout, StatementTimeout: 30 * time.Second})
}

// CanLock reports whether the queue ships lock.sql (without it, lock operations never apply).
func (e *Env) CanLock() bool { return e.In.Queue.Lock != "" }

// Reset ends every open locker transaction, empties the queue and starts a fresh model, so the
// next run begins from exactly the state a fresh install would have.
func (e *Env) Reset(ctx context.Context) error {
	for i, l := range e.Lockers {
		if l.S == nil || l.S.Conn().IsClosed() {
			s, err := e.connect(ctx, fmt.Sprintf("locker%d", i))
			if err != nil {
				return err
			}
			l.S = s
		} else if l.Job != 0 {
			if err := l.S.Rollback(ctx); err != nil {
				return fmt.Errorf("pgqcheck: ending a locker's transaction: %w", err)
			}
		}
		l.Job = 0
	}
	for _, w := range e.Workers {
		w.Tokens = nil
	}
	if err := e.In.Reset(ctx); err != nil {
		return err
	}
	e.Model = model.New(e.In.Queue.Order)
	e.Now, e.Trace, e.Ops, e.next = 0, nil, nil, 0
	return nil
}

// Close ends every session.
func (e *Env) Close() {
	for _, s := range e.sessions() {
		s.Close()
	}
}

func (e *Env) sessions() []*sut.Session {
	var out []*sut.Session
	if e.Reader != nil {
		out = append(out, e.Reader)
	}
	for _, w := range e.Workers {
		out = append(out, w.S)
	}
	for _, l := range e.Lockers {
		if l.S != nil {
			out = append(out, l.S)
		}
	}
	return out
}

// Payload returns the next unique job payload.
func (e *Env) Payload() string {
	e.next++
	return fmt.Sprintf(`{"n":%d}`, e.next)
}

// Step runs one operation, records it in the trace, and returns the violation or error it met.
// A harness failure (not a verdict on the queue) is returned as a *HarnessError.
func (e *Env) Step(ctx context.Context, op Op) error {
	if c, ok := op.(Compound); ok {
		// Each part is a step of its own, checked and traced alone: programs read, count,
		// save and reduce in simple operations.
		for _, part := range c.Parts() {
			if !part.Applicable(e) {
				continue
			}
			if err := e.Step(ctx, part); err != nil {
				return err
			}
		}
		return nil
	}
	e.step = answers{}
	answer, err := op.Run(ctx, e)
	e.Counts.observe(op, e.step, err)
	line := op.String()
	if answer != "" {
		line = fmt.Sprintf("%-28s -> %s", line, answer)
	}
	e.Trace = append(e.Trace, line)
	e.Ops = append(e.Ops, op)
	if err != nil {
		return err
	}
	return e.Check(ctx)
}

// Check compares the queue's snapshot with the model.
func (e *Env) Check(ctx context.Context) error {
	rows, err := e.Reader.Snapshot(ctx)
	if err != nil {
		return queueErr(err)
	}
	return e.Model.CheckSnapshot(e.Now, rows)
}

// Program renders the trace as a numbered list, for failure messages and reports.
func (e *Env) Program() string {
	var b strings.Builder
	for i, l := range e.Trace {
		fmt.Fprintf(&b, "%4d. %s\n", i+1, l)
	}
	return b.String()
}

// HarnessError is a failure of the suite's own machinery (a connection, a wait), not a finding.
type HarnessError struct{ Err error }

func (h *HarnessError) Error() string { return "harness: " + h.Err.Error() }
func (h *HarnessError) Unwrap() error { return h.Err }

// queueErr classifies an error from a queue statement: a multi-row claim or a failed statement
// is a finding; anything else is the harness's.
func queueErr(err error) error {
	var multi *sut.ErrMultipleRows
	if errors.As(err, &multi) {
		return multi.Violation()
	}
	var se *sut.StatementError
	if errors.As(err, &se) && se.SQLState != "" {
		if se.LockWait() {
			return model.Violate(model.PNoErrors, "%s waited for a row lock held by another session (lock_timeout, SQLSTATE 55P03); a sequential run never needs to wait", se.File)
		}
		return model.Violate(model.PNoErrors, "%s failed with SQLSTATE %s: %s", se.File, se.SQLState, se.Msg)
	}
	return &HarnessError{err}
}
