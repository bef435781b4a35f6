package program

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/dbtime"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// The Prop suite's world: enough workers for one to hold a stale token while another reclaims,
// and lockers to hold two rows at once. A saved program replays only in the same world, so
// every runner of the state machine uses these.
const (
	Workers = 3
	Lockers = 2
	// Reader runs the operations printed without a session: enqueue, expire, the snapshots.
	Reader = "reader"
)

// WorkerName and LockerName are the sequential world's session names.
func WorkerName(i int) string { return fmt.Sprintf("w%d", i) }
func LockerName(i int) string { return fmt.Sprintf("locker%d", i) }

// Token is what a claim hands a worker: the job and the generation it must present, and
// where, on the database clock, the lease it asked for ends (as far as the claim's clock
// readings tell).
type Token struct {
	ID, Gen int64
	Lease   time.Duration
	Until   model.Window
}

func (t Token) String() string { return fmt.Sprintf("job %d gen %d", t.ID, t.Gen) }

// Session is one session as its client sees it, in every mode: the tokens its claims returned,
// its open transaction, the row locks that transaction holds.
type Session struct {
	Name string
	// Tokens holds every claim the session made, newest last; older ones are what a paused
	// worker still presents after its job was reclaimed.
	Tokens  []Token
	InTxn   bool
	Aborted bool // the open transaction failed: it can only end
	Claimed bool // the open transaction's claim returned a job
	// Accepted: the open transaction's completion changed one row, so the transaction commits
	// (a completion carrying its business effect).
	Accepted bool
	// InTxnOp: the open transaction is a transaction operation's (ClaimTxn), which claims and
	// completes inside it even where queue statements otherwise run outside transactions.
	InTxnOp bool
	Locks   []int64 // jobs row-locked by the open transaction
	Busy    bool    // a statement is in flight (the scheduler's sessions only)
	Lives   int     // connections so far; a terminated session comes back as a new life
	// Crashes counts the worker's crashes: it comes back under a new name each time, as a
	// restarted worker process would.
	Crashes int
	// HoldsClaimTxn: a claim of a queue whose claims hold a transaction (TxBound) keeps that
	// transaction open on this session, until the completion commits it or the session ends.
	HoldsClaimTxn bool
}

// Worker is the name the session's claims pass as the worker's, where claim.sql takes one.
func (s *Session) Worker() string {
	if s.Crashes == 0 {
		return s.Name
	}
	return fmt.Sprintf("%s-%d", s.Name, s.Crashes+1)
}

// Label is the session's name in traces and histories: its life counts after the first.
func (s *Session) Label() string {
	if s.Lives <= 1 {
		return s.Name
	}
	return fmt.Sprintf("%s/%d", s.Name, s.Lives)
}

func (s *Session) EndTxn() {
	s.InTxn, s.Aborted, s.Claimed, s.InTxnOp, s.Locks, s.Accepted = false, false, false, false, nil, false
}

// newest returns the token back places before the session's newest.
func (s *Session) Newest(back int) (Token, bool) {
	if back < 0 || back >= len(s.Tokens) {
		return Token{}, false
	}
	return s.Tokens[len(s.Tokens)-1-back], true
}

// World is what every mode's operations are resolved against: the sessions by name, the jobs
// whose enqueue returned, every claim that returned a job. It holds no queue state: that is the
// model's (sequential) or the history's (concurrent modes).
type World struct {
	Sessions []*Session
	// Default runs the operations printed without a session (enqueue, expire, snapshot).
	Default string
	Jobs    []int64 // ids whose enqueue returned, in order
	// Strays are the jobs a claim or a snapshot showed that no returned enqueue created: an
	// enqueue whose answer was lost made them. Once seen, a later snapshot that lacks one
	// says something of it, as of any known job.
	Strays []int64
	Claims []Token // every claim that returned a job, in order
	// NoWaits: nothing may wait for a row lock (sequential mode, where a wait is a finding), so
	// an operation on a job another session holds locked does not apply.
	NoWaits bool
	// LocksOnlyInTxns: only row locks happen inside transactions (sequential mode, whose model
	// applies each statement when it returns; a queue that declares WorkAlone).
	LocksOnlyInTxns bool
	// Can is what the queue ships beyond the core, and whether the run calls a destination
	// (External, with Dest): an operation applies only where what it needs is there.
	Can model.Can
	// Life is how the queue's lifecycle goes, which its operations apply by; DueBy is the latest
	// database time at which a job the run scheduled (a run-at delay, a failure's backoff)
	// becomes due, which a drain waits for.
	Life  model.Lifecycle
	DueBy time.Duration
	// TxBound: the queue's claims hold the session's transaction; the harness opens none of its
	// own on a worker, and a worker holds one claim at a time.
	TxBound bool
	// ClaimsOutsideTxns: the queue declares that its claims run as statements of their own; no claim
	// is drawn inside a transaction.
	ClaimsOutsideTxns bool
	// FixedLease is the lease the queue fixes itself (0: each claim asks for its own); claims
	// that name a lease of their own then do not apply.
	FixedLease time.Duration
	Lease      time.Duration // the lease of a claim that names none
	// Dest is the URL of the destination workers call with a job's external effect between
	// its claim and its completion ("": none; program/external).
	Dest string
	// BackendsEnded: a statement may have ended other sessions' backends (an expiry on a queue
	// whose claims hold a transaction ends its holder's), which their runner must reconnect.
	BackendsEnded bool
	payloads      int
	// Clock is the run's database time, which every statement's window is counted in (a
	// concurrent run's recorder shares it).
	Clock *dbtime.Clock
	// CheckCost is how long the runner's own check after a step last took (a sequential
	// program's snapshot and counts; zero where nothing runs between steps): a pause to just
	// before a lease's edge ends that much earlier, so that the statement after it, not the
	// check, lands where the pause aimed, until Approach has measured how late such statements
	// land.
	CheckCost time.Duration
	Approach  Approach
}

// NewWorld returns a world with the named sessions; the first is the default one.
func NewWorld(q *sut.Queue, names ...string) *World {
	w := &World{Can: q.Can(), TxBound: q.Shape().TxBound, ClaimsOutsideTxns: q.ClaimsOutsideTxns || q.OwnsTransactions,
		LocksOnlyInTxns: q.OwnsTransactions, FixedLease: q.FixedLease, Lease: LongLease,
		Life: q.Shape().Life, Clock: &dbtime.Clock{}}
	if q.FixedLease != 0 {
		w.Lease = q.FixedLease
	}
	for _, n := range names {
		w.Sessions = append(w.Sessions, &Session{Name: n, Lives: 1})
	}
	if len(names) > 0 {
		w.Default = names[0]
	}
	return w
}

// DueAfter notes that a statement that ran in at may have made a job due d after it: DueBy
// covers it. A statement whose answer was lost may still have taken effect, no later than the
// moment its loss was seen, which is now as the database clock goes.
func (w *World) DueAfter(at model.Window, d time.Duration) {
	end := at.To
	if end == model.Never {
		end = w.Clock.Estimate()
	}
	w.DueBy = max(w.DueBy, end+d)
}

// Reset forgets everything but the sessions' names and lives, as a fresh queue starts.
func (w *World) Reset() {
	for _, s := range w.Sessions {
		*s = Session{Name: s.Name, Lives: s.Lives, Crashes: s.Crashes}
	}
	w.Jobs, w.Strays, w.Claims, w.payloads, w.DueBy = nil, nil, nil, 0, 0
	w.Clock.Reset()
	w.Approach.reset()
}

// Session returns the named session ("" is the default one).
func (w *World) Session(name string) *Session {
	if name == "" {
		name = w.Default
	}
	for _, s := range w.Sessions {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Payload returns the next unique job payload.
func (w *World) Payload() string {
	w.payloads++
	return fmt.Sprintf(`{"n":%d}`, w.payloads)
}

// Known reports whether a job's enqueue returned.
func (w *World) Known(id int64) bool {
	for _, j := range w.Jobs {
		if j == id {
			return true
		}
	}
	return false
}

// saw notes a job a statement's answer showed: a stray, unless its enqueue returned.
func (w *World) saw(id int64) {
	if !w.Known(id) && !slices.Contains(w.Strays, id) {
		w.Strays = append(w.Strays, id)
	}
}

// Seen is every job the world knows of: those whose enqueue returned, then the strays.
func (w *World) Seen() []int64 { return append(append([]int64(nil), w.Jobs...), w.Strays...) }

// LockedBy returns the session whose open transaction holds a job's row lock.
func (w *World) LockedBy(id int64) *Session {
	for _, s := range w.Sessions {
		for _, j := range s.Locks {
			if j == id {
				return s
			}
		}
	}
	return nil
}

// free reports whether session s may touch job id without waiting for another's row lock,
// where waiting is not allowed.
func (w *World) free(s *Session, id int64) bool {
	o := w.LockedBy(id)
	return !w.NoWaits || o == nil || o == s
}

// Lost records that a session's connection is gone: its transaction ended without a COMMIT,
// and it comes back as a new life with the tokens it held (a worker's memory outlives its
// connection; a crash is what forgets).
func (w *World) Lost(s *Session) {
	s.EndTxn()
	s.Busy, s.HoldsClaimTxn = false, false
	s.Lives++
}

// HarnessError is a failure of the suite's own machinery (a connection, a wait), not a finding.
type HarnessError struct{ Err error }

func (h *HarnessError) Error() string { return "harness: " + h.Err.Error() }
func (h *HarnessError) Unwrap() error { return h.Err }

// IsHarness reports whether err is the harness's own failure rather than a verdict.
func IsHarness(err error) bool {
	var h *HarnessError
	return errors.As(err, &h)
}

func oneLine(err error) string { return textfmt.OneLine(err.Error()) }
