package lifecycle

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
)

// The formats the lifecycle's operations print with and parse from; the session an operation
// runs on is printed before it, as the program package's are.
const (
	fmtFail          = "fail newest"
	fmtFailBack      = "fail newest-%d"
	fmtFailFinal     = "fail newest, final"
	fmtFailBackFinal = "fail newest-%d, final"
	fmtRenew         = "renew newest"
	fmtRenewBack     = "renew newest-%d"
	fmtHeartbeat     = "heartbeat"
	fmtLater         = "enqueue due in %v"
	fmtEffect        = "complete newest with its effect"
	fmtEffectBack    = "complete newest-%d with its effect"
	fmtEffectPart    = "effect of newest"
	fmtEffectPartBk  = "effect of newest-%d"
	fmtSettle        = "commit if completed, else rollback"
	fmtCount         = "count effects"
	fmtDueBefore     = "pause until %v before the last job falls due"
	fmtDueAfter      = "pause until %v after the last job falls due"
)

func on(s string) string {
	if s == "" {
		return ""
	}
	return s + " "
}

// back prints a reference to one of a session's tokens: its newest, or one before.
func back(format, formatBack string, n int) string {
	if n == 0 {
		return format
	}
	return fmt.Sprintf(formatBack, n)
}

// Fail: worker S reports a failure of one of its claims (Back=0 its newest), retryable unless
// Final. An old token is a paused worker's, whose job may since have been reclaimed: its
// failure must change nothing.
type Fail struct {
	S     string
	Back  int
	Final bool
}

func (o Fail) String() string {
	if o.Final {
		return on(o.S) + back(fmtFailFinal, fmtFailBackFinal, o.Back)
	}
	return on(o.S) + back(fmtFail, fmtFailBack, o.Back)
}
func (o Fail) On() string { return o.S }

// Applicable: where the queue has fail.sql, and the token could be presented in a completion.
func (o Fail) Applicable(w *program.World) bool {
	return w.Can.Fail && (program.Complete{S: o.S, Back: o.Back}).Applicable(w)
}
func (o Fail) Stmts(w *program.World) []program.Stmt {
	t, _ := w.Session(o.S).Newest(o.Back)
	text := fmt.Sprintf("job %d gen %d failed", t.ID, t.Gen)
	if o.Final {
		text += " for good"
	}
	return []program.Stmt{FailStmt{Job: t.ID, Gen: t.Gen, Retryable: !o.Final, Text: text}}
}

// Renew: worker S renews the lease of one of its claims for as long as that claim asked for
// (Back=0 its newest). A stale one's renewal must change nothing.
type Renew struct {
	S    string
	Back int
}

func (o Renew) String() string { return on(o.S) + back(fmtRenew, fmtRenewBack, o.Back) }
func (o Renew) On() string     { return o.S }
func (o Renew) Applicable(w *program.World) bool {
	return w.Can.Renew && (program.Complete{S: o.S, Back: o.Back}).Applicable(w)
}
func (o Renew) Stmts(w *program.World) []program.Stmt {
	t, _ := w.Session(o.S).Newest(o.Back)
	return []program.Stmt{RenewStmt{Job: t.ID, Gen: t.Gen, Lease: leaseOf(w, t)}}
}

// leaseOf is the lease a renewal of token t asks for: what its claim asked for.
func leaseOf(w *program.World, t program.Token) time.Duration {
	if t.Lease == 0 {
		return w.Life.Lease(w.Lease)
	}
	return t.Lease
}

// Heartbeat: worker S's heartbeat, where leases are the worker's, renews every live lease it
// holds for as long as its newest claim asked for.
type Heartbeat struct{ S string }

func (o Heartbeat) String() string { return on(o.S) + fmtHeartbeat }
func (o Heartbeat) On() string     { return o.S }
func (o Heartbeat) Applicable(w *program.World) bool {
	s := w.Session(o.S)
	if !w.Can.Heartbeat || s == nil || len(s.Tokens) == 0 || !(program.Snapshot{S: o.S}).Applicable(w) {
		return false
	}
	// Where nothing may wait, no other session holds a row it would renew.
	for _, t := range s.Tokens {
		if l := w.LockedBy(t.ID); w.NoWaits && l != nil && l != s {
			return false
		}
	}
	return true
}
func (o Heartbeat) Stmts(w *program.World) []program.Stmt {
	s := w.Session(o.S)
	t, _ := s.Newest(0)
	return []program.Stmt{HeartbeatStmt{Worker: s.Worker(), Lease: leaseOf(w, t)}}
}

// Later enqueues one job due Delay after its enqueue runs.
type Later struct {
	S     string
	Delay time.Duration
}

func (o Later) String() string { return on(o.S) + fmt.Sprintf(fmtLater, o.Delay) }
func (o Later) On() string     { return o.S }
func (o Later) Applicable(w *program.World) bool {
	return w.Can.Delay && o.Delay > 0 && (program.Enqueue{S: o.S, N: 1}).Applicable(w)
}
func (o Later) Stmts(w *program.World) []program.Stmt {
	return []program.Stmt{LaterStmt{EnqueueStmt: program.EnqueueStmt{Payload: w.Payload()}, Delay: o.Delay}}
}

// WithEffect: worker S completes one of its claims (Back=0 its newest) in one transaction with
// the job's business effect, written first, as the seed advises for database-only work: the
// transaction commits only when the completion changed one row, and rolls back otherwise, so
// a stale, expired or refused completion leaves no effect.
type WithEffect struct {
	S    string
	Back int
}

func (o WithEffect) String() string  { return on(o.S) + back(fmtEffect, fmtEffectBack, o.Back) }
func (o WithEffect) Session() string { return o.S }
func (o WithEffect) Parts() []program.Op {
	return []program.Op{program.Begin{S: o.S}, Effect{S: o.S, Back: o.Back}, program.Complete{S: o.S, Back: o.Back}, Settle{S: o.S}}
}
func (o WithEffect) Applicable(w *program.World) bool {
	s := w.Session(o.S)
	return w.Can.Effect && s != nil && !s.InTxn && !w.TxBound && (program.Complete{S: o.S, Back: o.Back}).Applicable(w)
}

// Effect writes the business effect of one of session S's claims in its open transaction.
type Effect struct {
	S    string
	Back int
}

func (o Effect) String() string { return on(o.S) + back(fmtEffectPart, fmtEffectPartBk, o.Back) }
func (o Effect) On() string     { return o.S }
func (o Effect) Applicable(w *program.World) bool {
	s := w.Session(o.S)
	if s == nil || s.Busy || !s.InTxn || s.Aborted || !w.Can.Effect {
		return false
	}
	_, ok := s.Newest(o.Back)
	return ok
}
func (o Effect) Stmts(w *program.World) []program.Stmt {
	t, _ := w.Session(o.S).Newest(o.Back)
	return []program.Stmt{EffectStmt{Job: t.ID}}
}

// Settle ends session S's transaction by what its completion answered: COMMIT when it changed
// one row, else ROLLBACK.
type Settle struct{ S string }

func (o Settle) String() string { return on(o.S) + fmtSettle }
func (o Settle) On() string     { return o.S }
func (o Settle) Applicable(w *program.World) bool {
	s := w.Session(o.S)
	return s != nil && !s.Busy && s.InTxn
}
func (o Settle) Commits(w *program.World) bool {
	s := w.Session(o.S)
	return s.Accepted && !s.Aborted
}
func (o Settle) Stmts(w *program.World) []program.Stmt {
	if o.Commits(w) {
		return []program.Stmt{program.CommitStmt}
	}
	return []program.Stmt{program.RollbackStmt}
}

// CountEffects reads the business table's effect count of every job, which a concurrent history
// records one observation per job whose enqueue returned before it was sent.
type CountEffects struct{ S string }

func (o CountEffects) String() string { return on(o.S) + fmtCount }
func (o CountEffects) On() string     { return o.S }
func (o CountEffects) Applicable(w *program.World) bool {
	return w.Can.Effect && (program.Snapshot{S: o.S}).Applicable(w)
}
func (o CountEffects) Stmts(w *program.World) []program.Stmt {
	return []program.Stmt{EffectsStmt{Known: append([]int64(nil), w.Jobs...)}}
}

// DueEdge pauses until Margin before (or, After, past) the moment the last job the run
// scheduled falls due (a run-at delay, a failure's backoff), as far as the clock readings
// around those statements place it: what runs next (a claim, the snapshot after every step)
// lands at that edge, where a claim that takes a job early, or leaves a due one, shows.
type DueEdge struct {
	Margin time.Duration
	After  bool
}

func (o DueEdge) String() string {
	if o.After {
		return fmt.Sprintf(fmtDueAfter, o.Margin)
	}
	return fmt.Sprintf(fmtDueBefore, o.Margin)
}
func (o DueEdge) target(w *program.World) time.Duration {
	if o.After {
		return w.DueBy + o.Margin
	}
	return w.DueBy - o.Margin
}
func (o DueEdge) Applicable(w *program.World) bool {
	d := o.target(w) - w.Clock.Estimate()
	return w.DueBy > 0 && d > 0 && d <= program.MaxNearLease
}
func (o DueEdge) Run(ctx context.Context, r program.Runner) error {
	w := r.World()
	if d := o.target(w) - w.Clock.Estimate(); d > 0 {
		return r.Sleep(ctx, d)
	}
	return nil
}

func init() {
	num := func(v string) int { n, _ := strconv.Atoi(v); return n }
	tokenOp := func(format string, build func(s string, back int) program.Op) {
		program.Syntax(format, func(s string, v []string) (program.Op, error) {
			n := 0
			if len(v) > 0 {
				n = num(v[0])
			}
			return build(s, n), nil
		})
	}
	tokenOp(fmtFail, func(s string, n int) program.Op { return Fail{S: s, Back: n} })
	tokenOp(fmtFailBack, func(s string, n int) program.Op { return Fail{S: s, Back: n} })
	tokenOp(fmtFailFinal, func(s string, n int) program.Op { return Fail{S: s, Back: n, Final: true} })
	tokenOp(fmtFailBackFinal, func(s string, n int) program.Op { return Fail{S: s, Back: n, Final: true} })
	tokenOp(fmtRenew, func(s string, n int) program.Op { return Renew{S: s, Back: n} })
	tokenOp(fmtRenewBack, func(s string, n int) program.Op { return Renew{S: s, Back: n} })
	tokenOp(fmtHeartbeat, func(s string, _ int) program.Op { return Heartbeat{S: s} })
	tokenOp(fmtEffect, func(s string, n int) program.Op { return WithEffect{S: s, Back: n} })
	tokenOp(fmtEffectBack, func(s string, n int) program.Op { return WithEffect{S: s, Back: n} })
	tokenOp(fmtEffectPart, func(s string, n int) program.Op { return Effect{S: s, Back: n} })
	tokenOp(fmtEffectPartBk, func(s string, n int) program.Op { return Effect{S: s, Back: n} })
	tokenOp(fmtSettle, func(s string, _ int) program.Op { return Settle{S: s} })
	tokenOp(fmtCount, func(s string, _ int) program.Op { return CountEffects{S: s} })
	timed := func(format string, build func(s string, d time.Duration) program.Op) {
		program.Syntax(format, func(s string, v []string) (program.Op, error) {
			d, err := time.ParseDuration(v[0])
			return build(s, d), err
		})
	}
	timed(fmtLater, func(s string, d time.Duration) program.Op { return Later{S: s, Delay: d} })
	timed(fmtDueBefore, func(_ string, d time.Duration) program.Op { return DueEdge{Margin: d} })
	timed(fmtDueAfter, func(_ string, d time.Duration) program.Op { return DueEdge{Margin: d, After: true} })
}
