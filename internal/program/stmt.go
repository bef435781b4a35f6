package program

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Stmt is one statement a session sends, with every reference resolved: the only thing the
// modes hand to Postgres. Sequential programs, scheduled interleavings, stress traffic and the
// drain all run their operations as statements. Each kind of statement is one type that
// carries everything about that kind, so that adding a kind is writing one type:
//
//   - how it runs on a session (Exec) and reads in traces (String, Answer);
//   - what its answer means to the sequential specification (Judge);
//   - what its answer tells of the session that sent it (Apply, on the world);
//   - what a concurrent history keeps of it (Record), which is also what it adds to a run's
//     counts (Count).
type Stmt interface {
	// Name is the statement's kind, as messages name it ("claim", "begin").
	Name() string
	// String is the statement with its references resolved, for traces.
	String() string
	// Exec sends the statement on s and waits for its answer. It touches nothing but s, so a
	// scheduler may run it on a goroutine of its own.
	Exec(ctx context.Context, s *sut.Session) Result
	// Answer is the result in words, for traces ("" when there is nothing to say).
	Answer(r Result) string
	// Judge checks the answer, which session s got in window at, against the sequential
	// specification m, and applies it there.
	Judge(m *model.Queue, s *Session, r Result, at model.Window) error
	// Apply records on the world what the answer tells of session s: tokens, its transaction,
	// the row locks that transaction holds.
	Apply(w *World, s *Session, r Result, at model.Window)
	// Record writes what a concurrent history keeps of the answer.
	Record(h Recording, r Result)
}

// Result is what came back. Out holds the answer in the form a history records it; Clock
// the database time the queue's statement ran in (zero for the harness's own statements).
type Result struct {
	Out  model.Output
	Rows []model.Row // snapshot
	Jobs []int64     // rescue: the jobs it made ready
	// Effects is the business table's counts (effects.sql).
	Effects []model.EffectCount
	// Call is the external effect's destination's answer (program/external); Dest what that
	// destination holds of every job.
	Call  effectdest.Answer
	Dest  effectdest.Counts
	Clock sut.Clock
	Err   error
}

// Recording is where a concurrent client keeps a statement's answer. The statement says what
// its answer is in a history's terms; the recording knows the transaction it ran in, the
// time it was called and returned, and the window of database time it ran in.
type Recording interface {
	// Write records an operation that changes the queue; inside a transaction it takes effect
	// when that transaction commits.
	Write(in model.Input, out model.Output)
	// Read records an operation that changes nothing however its transaction ends: an
	// observation, an empty claim, a row lock taken.
	Read(in model.Input, out model.Output)
	// Failed records a queue statement that failed; its outcome follows from the error and from
	// the transaction it ran in.
	Failed(in model.Input, err error)
	// Aborted: a statement failed inside the open transaction, which can now only roll back.
	Aborted()
	// Begin and End: the session's transaction opened; it ended by COMMIT (commit) or
	// ROLLBACK, whose error is err.
	Begin()
	End(commit bool, err error)
	// Locked: the open transaction row-locked job.
	Locked(job int64)
	// Claimed and Completed: a claim returned a job, a completion of it was accepted (a queue
	// whose claims hold the session's transaction keeps track of which jobs it holds).
	Claimed(job, gen int64)
	Completed(job int64)
}

// Count adds a statement's answer to c: what its record says, operation by operation (Counts.Op),
// as a history's counts come from what it recorded; a statement that records nothing a history
// keeps says what it counts itself (Counter).
func Count(c *Counts, st Stmt, r Result) {
	if own, ok := st.(Counter); ok {
		own.Count(c, r)
		return
	}
	st.Record(counting{c}, r)
}

// Counter is a statement whose answer counts for something no history records (a call of an
// external destination).
type Counter interface {
	Count(c *Counts, r Result)
}

// counting is the Recording that counts what a statement records.
type counting struct{ c *Counts }

func (k counting) Write(in model.Input, out model.Output) { k.c.Op(in, out) }
func (k counting) Read(in model.Input, out model.Output)  { k.c.Op(in, out) }
func (counting) Failed(model.Input, error)                {}
func (counting) Aborted()                                 {}
func (counting) Begin()                                   {}
func (counting) End(bool, error)                          {}
func (counting) Locked(int64)                             {}
func (counting) Claimed(int64, int64)                     {}
func (counting) Completed(int64)                          {}

// Apply records what a statement of session s answered (see Stmt.Apply).
func (w *World) Apply(s *Session, st Stmt, r Result, at model.Window) { st.Apply(w, s, r, at) }

// FileOf is the contract's file a statement of the queue's own runs ("", false for the
// harness's statements: transaction boundaries, pauses).
func FileOf(st Stmt) (string, bool) {
	f, ok := st.(interface{ File() string })
	if !ok {
		return "", false
	}
	return f.File(), true
}

// IsTimed reports whether a statement's effect ends by itself in real time: a claim with a
// lease of its own length, which traces then show with database times.
func IsTimed(st Stmt) bool {
	t, ok := st.(interface{ Timed() bool })
	return ok && t.Timed()
}

// SkipsLocked reports whether a statement must skip rows other sessions hold locked rather
// than wait for them: a wait of such a statement is a finding (property 5).
func SkipsLocked(st Stmt) bool {
	t, ok := st.(interface{ SkipsLocked() bool })
	return ok && t.SkipsLocked()
}

// StatementFailed records on the session that one of its statements failed: a transaction it ran in
// can now only end.
func (s *Session) StatementFailed() {
	if s.InTxn {
		s.Aborted = true
	}
}

// harnessStmt gives the harness's own statements (transaction boundaries, pauses) what they
// share: their failure is the harness's, and no history or count keeps them.
type harnessStmt struct{}

func (harnessStmt) Answer(r Result) string {
	if r.Err != nil {
		return "error: " + oneLine(r.Err)
	}
	return ""
}
func (harnessStmt) Record(Recording, Result) {}

func harnessFailure(s *Session, st Stmt, err error) error {
	return &HarnessError{fmt.Errorf("%s: %s: %w", s.Name, st, err)}
}

// errAnswer is a failed statement's answer in words.
func errAnswer(r Result) (string, bool) {
	if r.Err != nil {
		return "error: " + oneLine(r.Err), true
	}
	return "", false
}

// queueErr classifies an error from a queue statement: a multi-row claim or a failed statement
// is a finding; anything else is the harness's.
func QueueError(err error) error {
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
