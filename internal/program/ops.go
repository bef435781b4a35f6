package program

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

// Op is one operation of a program, in every mode. It prints itself (String, exactly what
// Parse reads back), says whether it applies now (otherwise it is skipped, so that programs
// from random bytes, shrinking or reduction stay meaningful), and comes in three shapes:
//
//   - a Step issues statements on one session (Stmts, resolved against the world when it runs);
//   - a Compound is a fixed sequence of other operations, each checked and traced alone;
//   - a Procedure chooses its next step from the answers before (drain, a short lease).
//
// A concurrent program is the same operations bound to sessions ("s1 claim", "s2 complete
// newest", "s1 commit"); the session is part of the operation, as it is of what it prints.
type Op interface {
	String() string
	Applicable(w *World) bool
}

// Step is an operation that issues statements on one session. Every statement but the last
// must not wait for a row lock (begin, enqueue): a scheduler issues the last one and moves on.
type Step interface {
	Op
	On() string            // the session ("": the world's default)
	Stmts(w *World) []Stmt // the statements, references resolved now
}

// Compound is an operation made of simpler ones in a fixed order. It exists to make a scenario
// likely in random programs; runners run, check and trace its parts one by one.
type Compound interface {
	Op
	Parts() []Op
}

// Procedure is an operation that runs its own steps through a runner, choosing each from the
// answers before.
type Procedure interface {
	Op
	Run(ctx context.Context, r Runner) error
}

// Runner is what a procedure runs its steps on: the sequential environment (each step checked
// by the model) or a scheduler (each step recorded in the history).
type Runner interface {
	World() *World
	// Do runs one step to its end and returns its statements' results.
	Do(ctx context.Context, s Step) ([]Result, error)
	// Sleep lets real time pass, as the model's clock sees it too.
	Sleep(ctx context.Context, d time.Duration) error
}

// Wait is a runner's Sleep: it waits d, or until ctx ends (its error) or halt is closed (nil:
// never).
func Wait(ctx context.Context, d time.Duration, halt <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-halt:
	case <-t.C:
	}
	return nil
}

// Fault is something the harness does to a session from outside: interrupt its statement, end its
// backend. Runners carry it out; it issues no statement of its own.
type Fault interface {
	Step
	Injects() BackendFault
}

// BackendFault is the fault a Fault injects.
type BackendFault string

const (
	// FaultInterrupt is pg_cancel_backend: it interrupts the statement the session runs (a
	// history records it as Postgres names it, "cancel").
	FaultInterrupt BackendFault = "cancel"
	FaultTerminate BackendFault = "terminate" // pg_terminate_backend
)

// Lease lengths and pauses. The long lease outlives any run, so only expire and the short-lease
// operation end leases. The short lease and its pauses keep wide margins (the early completion
// lands within a few milliseconds of a 1 s lease; the late one 500 ms after it ran out), so the
// outcome never depends on scheduling noise and a run stays deterministic for shrinking.
const (
	LongLease = time.Hour
	// MaxNearLease bounds the leases a pause waits out to their end: a run pauses seconds,
	// never an hour.
	MaxNearLease  = 5 * time.Second
	ShortLeaseLen = time.Second
	LatePause     = ShortLeaseLen + 500*time.Millisecond
	// EarlyBudget is how long an early completion may take after its claim before the run
	// reports timing noise rather than a verdict.
	EarlyBudget = ShortLeaseLen / 2
)

// TimedLease reports whether a claim's lease is one of its own length, which ends by itself
// within a run (the long lease, or none given, outlives it).
func TimedLease(d time.Duration) bool { return d != 0 && d != LongLease }

// The formats every operation prints with and parses from (syntax.go builds the parser from
// these same strings, so the two cannot drift apart). %s is a session, %d a number, %v a
// duration; the session an operation runs on is printed before it.
const (
	fmtEnqueue         = "enqueue %d"
	fmtClaim           = "claim"
	fmtClaimLease      = "claim lease %v"
	fmtComplete        = "complete newest"
	fmtCompleteBack    = "complete newest-%d"
	fmtExpire          = "expire job %d"
	fmtExpireClaim     = "expire newest claim"
	fmtExpireClaimBack = "expire newest claim-%d"
	fmtPause           = "pause past lease"
	fmtSnapshot        = "snapshot"
	fmtBegin           = "begin"
	fmtLock            = "lock job %d"
	fmtCommit          = "commit"
	fmtRollback        = "rollback"
	fmtInterrupt       = "interrupt"
	fmtTerminate       = "terminate"
	fmtCrash           = "crash"
	fmtDrain           = "drain"
	fmtRescue          = "rescue"
	fmtOverslept       = "pause past lease, then complete"
	fmtReplaced        = "pause past lease, %s claim, %s complete"
	fmtShortEarly      = "claim %v lease, complete at once"
	fmtShortLate       = "claim %v lease, pause %v, complete"
	fmtSleep           = "pause %v"
	fmtCompleteIt      = "complete it" // a claim transaction's completion of its own claim
	fmtNearBefore      = "pause until %v before its lease ends"
	fmtNearAfter       = "pause until %v after its lease ends"
	fmtNearJustBefore  = "pause to just before its lease ends"
	fmtNearJustAfter   = "pause to just after its lease ends"
	fmtRescueTxn       = "begin; %s pause to just after its lease ends; rescue; commit"
)

func on(s string) string {
	if s == "" {
		return ""
	}
	return s + " "
}

// Sleep lets real time pass for every session: leases run out on the database clock while
// nothing happens.
type Sleep struct{ D time.Duration }

func (o Sleep) String() string                          { return fmt.Sprintf(fmtSleep, o.D) }
func (o Sleep) Applicable(w *World) bool                { return o.D > 0 }
func (o Sleep) Run(ctx context.Context, r Runner) error { return r.Sleep(ctx, o.D) }

// Near: worker W pauses until Margin before (or, After, Margin past) the end of its newest
// lease, as far as the claim's clock readings place that end: just before, the lease must
// still be live to every check; just after, it must be over. What runs next (another worker's
// claim, W's completion, the snapshot after every step) lands at the lease's edge, where a
// margin applied the wrong way, a lease shorter than asked or a clock read at the wrong
// instant shows.
//
// Tight approaches the edge as closely as the claim's measured window allows: the lease's end
// lies somewhere in that window shifted by the lease, as wide as the claim's own round trip and
// clock readings. Just after, the pause ends a millisecond past the window's latest end, so the
// next statement's first clock reading comes after every end the lease may have; just before,
// it ends three such widths and two milliseconds ahead of the earliest end, room for the
// runner's check after the pause and a statement as long as the claim to return before any
// end. How close that lands is those widths (a fraction of a millisecond to a few on a loaded
// machine) plus the timer's lateness.
type Near struct {
	W      string
	Margin time.Duration
	After  bool
	Tight  bool
}

// TightGap is how far past (or, with the claim's width added, ahead of) the measured edge a
// tight pause ends.
const TightGap = time.Millisecond

// Session is the worker whose lease the pause waits for, where it runs.
func (o Near) Session() string { return o.W }

func (o Near) String() string {
	switch {
	case o.Tight && o.After:
		return on(o.W) + fmtNearJustAfter
	case o.Tight:
		return on(o.W) + fmtNearJustBefore
	}
	if o.After {
		return on(o.W) + fmt.Sprintf(fmtNearAfter, o.Margin)
	}
	return on(o.W) + fmt.Sprintf(fmtNearBefore, o.Margin)
}

// target is where the pause aims (the database time it ends at, before any correction for
// the statement's lateness) and the lease's earliest end, and whether W holds a lease that ends
// by itself.
func (o Near) target(w *World) (Landing, bool) {
	s, ok := idle(w, o.W)
	if !ok {
		return Landing{}, false
	}
	t, ok := s.Newest(0)
	if !ok || t.Lease > MaxNearLease || t.Until.To == model.Never {
		return Landing{}, false
	}
	margin := o.Margin
	if o.Tight {
		margin = TightGap
		if !o.After {
			// The statement that lands there takes about as long as the claim did, and its
			// window may reach as far past the earliest end as the claim's was wide.
			margin = 2*TightGap + 2*(t.Until.To-t.Until.From)
		}
	}
	l := Landing{Aim: t.Until.From - margin, Edge: t.Until.From}
	if o.After {
		l.Aim = t.Until.To + margin
	}
	return l, true
}

// end is target with the database time the pause ends at: its aim, or, before the edge,
// earlier by how late the statement after such a pause has been landing (the runner's check
// after the pause, the timer, the statement's trip to the server).
func (o Near) end(w *World) (Landing, bool) {
	l, ok := o.target(w)
	l.End = l.Aim
	if ok && !o.After {
		l.End -= w.Approach.Delay(w.CheckCost)
	}
	return l, ok
}

func (o Near) Applicable(w *World) bool {
	_, ok := o.target(w)
	return ok
}

// Run sleeps until the target by the best guess of the database's time now. The guess only
// decides how long to sleep: every check after it is judged by measured windows, so a wrong
// guess costs a check's power, never a false alarm.
func (o Near) Run(ctx context.Context, r Runner) error {
	w := r.World()
	l, ok := o.end(w)
	if !ok {
		return nil
	}
	if !o.After {
		w.Approach.Pause(l)
	}
	if d := l.End - w.Clock.Estimate(); d > 0 {
		return r.Sleep(ctx, d)
	}
	return nil
}

// idle reports whether a session exists and may issue a statement now.
func idle(w *World, name string) (*Session, bool) {
	s := w.Session(name)
	return s, s != nil && !s.Busy
}

// outsideTxnWork: in a world where only row locks live in transactions, queue statements
// run outside them.
func outsideTxnWork(w *World, s *Session) bool { return !w.LocksOnlyInTxns || !s.InTxn || s.InTxnOp }

// Enqueue adds N jobs.
type Enqueue struct {
	S string
	N int
}

func (o Enqueue) String() string { return on(o.S) + fmt.Sprintf(fmtEnqueue, o.N) }
func (o Enqueue) On() string     { return o.S }
func (o Enqueue) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	// A session that holds a transaction-bound claim would enqueue inside its transaction, to
	// take effect only with the completion: not what an enqueue operation means.
	return ok && o.N > 0 && outsideTxnWork(w, s) && !(w.TxBound && s.HoldsClaimTxn)
}
func (o Enqueue) Stmts(w *World) []Stmt {
	out := make([]Stmt, o.N)
	for i := range out {
		out[i] = EnqueueStmt{Payload: w.Payload()}
	}
	return out
}

// Claim asks for a job with a lease (0: the world's long lease).
type Claim struct {
	S     string
	Lease time.Duration
}

func (o Claim) String() string {
	if o.Lease == 0 {
		return on(o.S) + fmtClaim
	}
	return on(o.S) + fmt.Sprintf(fmtClaimLease, o.Lease)
}
func (o Claim) On() string { return o.S }
func (o Claim) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && outsideTxnWork(w, s) && (!TimedLease(o.Lease) || w.FixedLease == 0) && !(w.TxBound && (s.HoldsClaimTxn || s.InTxn)) &&
		!(w.ClaimsOutsideTxns && s.InTxn)
}
func (o Claim) Stmts(w *World) []Stmt {
	lease := o.Lease
	switch {
	case w.FixedLease != 0:
		lease = w.FixedLease // whatever was asked, the queue's own
	case lease == 0:
		lease = w.Lease
	}
	return []Stmt{ClaimStmt{Lease: w.Life.Lease(lease), Worker: w.Session(o.S).Worker(), Owns: w.Life.WorkerLease}}
}

// Rescue runs the queue's rescue step (its rescuer, sweeper or scheduler), which makes ready the
// running jobs whose lease ended. It applies only to queues that ship rescue.sql.
type Rescue struct{ S string }

func (o Rescue) String() string { return on(o.S) + fmtRescue }
func (o Rescue) On() string     { return o.S }
func (o Rescue) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && w.Can.Rescue && (!s.InTxn || s.InTxnOp)
}
func (o Rescue) Stmts(w *World) []Stmt { return []Stmt{RescueStmt{}} }

// Complete presents one of the session's tokens: Back=0 its newest, 1 the one before, and so
// on. An old token is a paused worker's: its job may since have been reclaimed or completed.
type Complete struct {
	S    string
	Back int
}

func (o Complete) String() string {
	if o.Back == 0 {
		return on(o.S) + fmtComplete
	}
	return on(o.S) + fmt.Sprintf(fmtCompleteBack, o.Back)
}
func (o Complete) On() string { return o.S }
func (o Complete) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	if !ok || !outsideTxnWork(w, s) {
		return false
	}
	t, ok := s.Newest(o.Back)
	return ok && w.free(s, t.ID)
}
func (o Complete) Stmts(w *World) []Stmt {
	t, _ := w.Session(o.S).Newest(o.Back)
	return []Stmt{CompleteStmt{Job: t.ID, Gen: t.Gen}}
}

// completeClaimed is a claim transaction's own completion: it applies only when that
// transaction's claim returned a job, and prints as the completion of the newest token, which
// is what it presents.
type completeClaimed struct{ S string }

func (o completeClaimed) String() string { return Complete{S: o.S}.String() }
func (o completeClaimed) On() string     { return o.S }
func (o completeClaimed) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && s.InTxn && s.Claimed && !s.Aborted && (Complete{S: o.S}).Applicable(w)
}
func (o completeClaimed) Stmts(w *World) []Stmt { return Complete{S: o.S}.Stmts(w) }

// Expire moves a job's lease into the past (the seed's test hook).
type Expire struct {
	S   string
	Job int64
}

func (o Expire) String() string { return on(o.S) + fmt.Sprintf(fmtExpire, o.Job) }
func (o Expire) On() string     { return o.S }
func (o Expire) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && outsideTxnWork(w, s) && w.Known(o.Job) && w.free(s, o.Job)
}
func (o Expire) Stmts(w *World) []Stmt { return []Stmt{ExpireStmt{Job: o.Job}} }

// ExpireClaim ends the lease of the job of the newest claim any session made (Back=0), or of an
// earlier one: a lease worth ending, whatever ids the queue hands out.
type ExpireClaim struct {
	S    string
	Back int
}

func (o ExpireClaim) String() string {
	if o.Back == 0 {
		return on(o.S) + fmtExpireClaim
	}
	return on(o.S) + fmt.Sprintf(fmtExpireClaimBack, o.Back)
}
func (o ExpireClaim) On() string { return o.S }
func (o ExpireClaim) Job(w *World) (int64, bool) {
	if o.Back < 0 || o.Back >= len(w.Claims) {
		return 0, false
	}
	return w.Claims[len(w.Claims)-1-o.Back].ID, true
}
func (o ExpireClaim) Applicable(w *World) bool {
	id, ok := o.Job(w)
	return ok && Expire{S: o.S, Job: id}.Applicable(w)
}
func (o ExpireClaim) Stmts(w *World) []Stmt {
	id, _ := o.Job(w)
	return []Stmt{ExpireStmt{Job: id}}
}

// Pause: worker W stops past its lease (the seed's hard case). Its newest job's lease is
// expired, so another worker may reclaim it while W still holds the old token.
type Pause struct{ W string }

func (o Pause) String() string { return on(o.W) + fmtPause }
func (o Pause) On() string     { return "" } // the expiry is the test hook's, run by the default session
func (o Pause) Job(w *World) (int64, bool) {
	s := w.Session(o.W)
	if s == nil {
		return 0, false
	}
	t, ok := s.Newest(0)
	return t.ID, ok
}
func (o Pause) Applicable(w *World) bool {
	id, ok := o.Job(w)
	return ok && Expire{Job: id}.Applicable(w)
}
func (o Pause) Stmts(w *World) []Stmt {
	id, _ := o.Job(w)
	return []Stmt{ExpireStmt{Job: id}}
}

// Snapshot reads every job's row.
type Snapshot struct{ S string }

func (o Snapshot) String() string { return on(o.S) + fmtSnapshot }
func (o Snapshot) On() string     { return o.S }
func (o Snapshot) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && outsideTxnWork(w, s)
}
func (o Snapshot) Stmts(w *World) []Stmt {
	return []Stmt{SnapshotStmt{Known: w.Seen()}}
}

// Begin opens a transaction.
type Begin struct{ S string }

func (o Begin) String() string { return on(o.S) + fmtBegin }
func (o Begin) On() string     { return o.S }
func (o Begin) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && !s.InTxn && (!w.LocksOnlyInTxns || s.InTxnOp) && !w.TxBound // the queue's claims own the transactions
}
func (o Begin) Stmts(w *World) []Stmt { return []Stmt{BeginStmt{}} }

// Lock row-locks a job in the session's transaction, opening one when none is open, as the
// seed's manual-locker does.
type Lock struct {
	S   string
	Job int64
}

func (o Lock) String() string { return on(o.S) + fmt.Sprintf(fmtLock, o.Job) }
func (o Lock) On() string     { return o.S }
func (o Lock) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	if !ok || !w.Can.Lock || !w.Known(o.Job) || s.Aborted {
		return false
	}
	if w.NoWaits {
		// A sequential locker holds one row, of a job nobody else holds.
		return len(s.Locks) == 0 && w.LockedBy(o.Job) == nil
	}
	return true
}
func (o Lock) Stmts(w *World) []Stmt {
	lock := LockStmt{Job: o.Job}
	if w.Session(o.S).InTxn {
		return []Stmt{lock}
	}
	return []Stmt{BeginStmt{}, lock}
}

// Commit and Rollback end the session's transaction.
type Commit struct{ S string }

func (o Commit) String() string { return on(o.S) + fmtCommit }
func (o Commit) On() string     { return o.S }
func (o Commit) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && s.InTxn
}
func (o Commit) Stmts(w *World) []Stmt { return []Stmt{CommitStmt} }

// Commits says whether the operation ends its transaction with a COMMIT.
func (o Commit) Commits(*World) bool { return true }

type Rollback struct{ S string }

func (o Rollback) String() string { return on(o.S) + fmtRollback }
func (o Rollback) On() string     { return o.S }
func (o Rollback) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && s.InTxn
}
func (o Rollback) Stmts(w *World) []Stmt { return []Stmt{RollbackStmt} }

// Interrupt interrupts the session's statement (pg_cancel_backend). A session idle in its
// transaction is first parked in pg_sleep, so that there is a statement to interrupt, and then
// rolls back: the seed's "cancellation while the candidate is locked".
type Interrupt struct{ S string }

func (o Interrupt) String() string { return on(o.S) + fmtInterrupt }
func (o Interrupt) On() string     { return o.S }
func (o Interrupt) Applicable(w *World) bool {
	s := w.Session(o.S)
	return s != nil && (s.Busy || s.InTxn)
}
func (o Interrupt) Stmts(w *World) []Stmt { return nil }
func (o Interrupt) Injects() BackendFault { return FaultInterrupt }

// Terminate ends the session's backend (pg_terminate_backend); the session comes back as a
// new connection. Its transaction, if any, never committed.
type Terminate struct{ S string }

func (o Terminate) String() string { return on(o.S) + fmtTerminate }
func (o Terminate) On() string     { return o.S }
func (o Terminate) Applicable(w *World) bool {
	s := w.Session(o.S)
	return s != nil && (s.Busy || s.InTxn)
}
func (o Terminate) Stmts(w *World) []Stmt { return nil }
func (o Terminate) Injects() BackendFault { return FaultTerminate }

// Crash: worker W dies and forgets every token it held; its jobs wait for their leases.
type Crash struct{ W string }

func (o Crash) String() string { return on(o.W) + fmtCrash }
func (o Crash) On() string     { return o.W }
func (o Crash) Applicable(w *World) bool {
	s, ok := idle(w, o.W)
	return ok && len(s.Tokens) > 0
}
func (o Crash) Stmts(w *World) []Stmt {
	s := w.Session(o.W)
	s.Tokens = nil
	s.Crashes++
	return nil
}

// Overslept: worker W pauses past its lease and, before anyone reclaims the job, resumes and
// completes it: the completion must be refused (the lease ran out).
type Overslept struct{ W string }

func (o Overslept) String() string           { return on(o.W) + fmtOverslept }
func (o Overslept) Parts() []Op              { return []Op{Pause{W: o.W}, Complete{S: o.W}} }
func (o Overslept) Applicable(w *World) bool { return Pause{W: o.W}.Applicable(w) }

// Replaced is the seed's hard case: worker W pauses past its lease, worker By claims (and so
// reclaims W's job when it is next in line), then W resumes and completes with its old
// generation: a fenced queue refuses it.
type Replaced struct{ W, By string }

func (o Replaced) String() string { return on(o.W) + fmt.Sprintf(fmtReplaced, o.By, o.W) }
func (o Replaced) Parts() []Op    { return []Op{Pause{W: o.W}, Claim{S: o.By}, Complete{S: o.W}} }
func (o Replaced) Applicable(w *World) bool {
	return o.By != o.W && w.Session(o.By) != nil && Pause{W: o.W}.Applicable(w)
}

// Transaction is an operation that is one transaction of one session. A sequential run runs it
// as one step, checked when it has ended (a snapshot in between would see none of its work);
// a scheduler interleaves its parts with other sessions' statements.
type Transaction interface {
	Compound
	Session() string
}

// ClaimTxn claims inside a transaction, completes the claimed job in it when asked, and ends
// it. Wait pauses between BEGIN and the claim, Hold between the claim and the completion: a
// claim inside a transaction that began earlier is where now() (the transaction's start) and
// clock_timestamp() part ways, as the seed's Step 4 warns. Lease is the claim's own (zero:
// the world's).
//
// WaitEdge names a session whose newest lease the transaction waits across before its claim
// (a tight pause to just after that lease ends), so that a claim reading the transaction's
// start where it means the clock misses the job that lease freed. HoldEdge holds the claim's
// own lease past its end before the completion, for the same reason on the completion's side.
type ClaimTxn struct {
	S                string
	Complete, Commit bool
	Wait, Hold       time.Duration
	Lease            time.Duration
	WaitEdge         string
	HoldEdge         bool
}

func (o ClaimTxn) String() string  { return on(o.S) + txnLine(o.Parts(), o.S) }
func (o ClaimTxn) Session() string { return o.S }
func (o ClaimTxn) Parts() []Op {
	parts := []Op{Begin{S: o.S}}
	if o.Wait > 0 {
		parts = append(parts, Sleep{D: o.Wait})
	}
	if o.WaitEdge != "" {
		parts = append(parts, Near{W: o.WaitEdge, After: true, Tight: true})
	}
	parts = append(parts, Claim{S: o.S, Lease: o.Lease})
	if o.Hold > 0 {
		parts = append(parts, Sleep{D: o.Hold})
	}
	if o.HoldEdge {
		parts = append(parts, Near{W: o.S, After: true, Tight: true})
	}
	if o.Complete {
		parts = append(parts, completeClaimed{S: o.S})
	}
	if o.Commit {
		return append(parts, Commit{S: o.S})
	}
	return append(parts, Rollback{S: o.S})
}
func (o ClaimTxn) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	// The queue's claims hold transactions of their own, or run as statements of their own.
	return ok && !s.InTxn && !w.TxBound && !w.ClaimsOutsideTxns && (o.WaitEdge == "" || o.WaitEdge == o.S || Near{W: o.WaitEdge, After: true, Tight: true}.Applicable(w))
}

// RescueTxn runs the rescue step inside a transaction that began before another session's
// lease ended, and waited across that end: a rescue that reads the transaction's start where
// it means the clock leaves the lapsed job running.
type RescueTxn struct {
	S, Edge string
}

func (o RescueTxn) String() string  { return on(o.S) + fmt.Sprintf(fmtRescueTxn, o.Edge) }
func (o RescueTxn) Session() string { return o.S }
func (o RescueTxn) Parts() []Op {
	return []Op{Begin{S: o.S}, Near{W: o.Edge, After: true, Tight: true}, Rescue{S: o.S}, Commit{S: o.S}}
}
func (o RescueTxn) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && w.Can.Rescue && !s.InTxn && !w.TxBound && Near{W: o.Edge, After: true, Tight: true}.Applicable(w)
}

// txnLine prints a transaction's parts on one line, each without the session they share.
func txnLine(parts []Op, s string) string {
	var out []string
	for _, p := range parts {
		if _, ok := p.(completeClaimed); ok {
			out = append(out, fmtCompleteIt)
			continue
		}
		out = append(out, strings.TrimPrefix(p.String(), on(s)))
	}
	return strings.Join(out, "; ")
}

// LockTxn holds a job's row lock in a transaction, as the seed's manual-locker does, and ends it.
type LockTxn struct {
	S      string
	Job    int64
	Commit bool
}

func (o LockTxn) String() string {
	end := "rollback"
	if o.Commit {
		end = "commit"
	}
	return on(o.S) + fmt.Sprintf("begin; lock job %d; %s", o.Job, end)
}
func (o LockTxn) Parts() []Op {
	end := Op(Rollback{S: o.S})
	if o.Commit {
		end = Commit{S: o.S}
	}
	return []Op{Begin{S: o.S}, Lock{S: o.S, Job: o.Job}, end}
}
func (o LockTxn) Session() string { return o.S }
func (o LockTxn) Applicable(w *World) bool {
	return Begin{S: o.S}.Applicable(w) && Lock{S: o.S, Job: o.Job}.Applicable(w)
}

// Drain: every lease lapses (expire on each running job), then session S claims and completes
// until the queue answers none, and a final snapshot records every job's state. Afterwards
// every job no row lock holds must be done, each completed exactly once (property 6).
type Drain struct{ S string }

func (o Drain) String() string { return on(o.S) + fmtDrain }
func (o Drain) Applicable(w *World) bool {
	s, ok := idle(w, o.S)
	return ok && !s.InTxn
}
func (o Drain) Run(ctx context.Context, r Runner) error {
	w := r.World()
	res, err := r.Do(ctx, Snapshot{S: o.S})
	if err == nil && len(res) > 0 && res[0].Err != nil {
		// The session's connection may be gone (another session's expiry ended its backend, on a
		// queue whose claims hold transactions): it reconnects for the next statement.
		res, err = r.Do(ctx, Snapshot{S: o.S})
	}
	if err != nil {
		return err
	}
	var running []int64
	for _, row := range res[0].Rows {
		if row.State == "running" {
			running = append(running, row.ID)
		}
	}
	if err := o.lapse(ctx, r, running...); err != nil {
		return err
	}
	for i := 0; i <= len(res[0].Rows)+len(w.Jobs)+4; i++ {
		sent := w.Clock.Latest() // the claim runs no earlier
		c, err := r.Do(ctx, Claim{S: o.S})
		if err != nil {
			return err
		}
		if len(c) == 0 || c[0].Err != nil || !c[0].Out.Found {
			// Jobs the run scheduled for later (a run-at delay, a backoff, a rescue of the
			// drain's own) become due within a short wait, and a claim that found none may have
			// run before the last of them was due, however late its answer came: while a job
			// is ready, the drain waits for that time, as the database clock tells, and claims
			// again. A claim sent after it is the last word.
			if w.DueBy < sent || w.DueBy-sent > MaxNearLease {
				break
			}
			if s, err := r.Do(ctx, Snapshot{S: o.S}); err != nil || len(s) == 0 || !slices.ContainsFunc(s[0].Rows, func(r model.Row) bool { return r.State == model.Ready }) {
				return err
			}
			if d := w.DueBy - w.Clock.Estimate(); d > 0 {
				if err := r.Sleep(ctx, d+10*time.Millisecond); err != nil {
					return err
				}
			}
			continue
		}
		done, err := r.Do(ctx, Complete{S: o.S})
		if err != nil {
			return err
		}
		if w.FixedLease != 0 && len(done) > 0 && done[0].Err == nil && done[0].Out.Rows == 0 {
			// The queue's own lease ran out between the drain's claim and its completion (a
			// loaded machine's stall): the job runs on a lapsed lease, and goes round again.
			if err := o.lapse(ctx, r, c[0].Out.Job); err != nil {
				return err
			}
		}
	}
	_, err = r.Do(ctx, Snapshot{S: o.S})
	return err
}

// lapse ends the leases of jobs and rescues them, so the drain's claims take them.
func (o Drain) lapse(ctx context.Context, r Runner, jobs ...int64) error {
	w := r.World()
	for _, job := range jobs {
		if e := (Expire{S: o.S, Job: job}); e.Applicable(w) {
			if _, err := r.Do(ctx, e); err != nil {
				return err
			}
		}
	}
	if rescue := (Rescue{S: o.S}); rescue.Applicable(w) {
		_, err := r.Do(ctx, rescue)
		return err
	}
	return nil
}

// ShortLease: worker W claims with a real 1 s lease, then completes either at once (Late=false:
// must succeed) or after pausing past the lease (Late=true: must be refused): leases run on the
// database clock (property 8).
type ShortLease struct {
	W    string
	Late bool
}

func (o ShortLease) String() string {
	if o.Late {
		return on(o.W) + fmt.Sprintf(fmtShortLate, ShortLeaseLen, LatePause)
	}
	return on(o.W) + fmt.Sprintf(fmtShortEarly, ShortLeaseLen)
}
func (o ShortLease) Applicable(w *World) bool { return Claim{S: o.W}.Applicable(w) }
func (o ShortLease) Run(ctx context.Context, r Runner) error {
	start := time.Now()
	res, err := r.Do(ctx, Claim{S: o.W, Lease: ShortLeaseLen})
	if err != nil || !res[0].Out.Found {
		return err
	}
	if o.Late {
		if err := r.Sleep(ctx, LatePause); err != nil {
			return err
		}
	} else if d := time.Since(start); d > EarlyBudget {
		return &HarnessError{fmt.Errorf("timing noise: the early completion came %v after its claim, past the %v budget", d.Round(time.Millisecond), EarlyBudget)}
	}
	_, err = r.Do(ctx, Complete{S: o.W})
	return err
}
