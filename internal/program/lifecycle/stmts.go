// Package lifecycle holds the operations and statements of a job's life beyond the seed's
// claim and completion: a failure reported by the job's owner, a renewal of its lease (or a
// worker's heartbeat), an enqueue due later, and a completion carrying its business effect in
// one transaction. Each statement is one type of program.Stmt and each operation one
// program.Op that prints itself and parses back (program.Syntax), so every mode runs them as
// it runs the program package's own; they apply only where the queue ships what they need
// (fail.sql, renew.sql, a run-at delay, effect.sql).
package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// FailStmt reports a failure of the claim (Job, Gen), retryable or not, with an error text.
type FailStmt struct {
	Job, Gen  int64
	Retryable bool
	Text      string
}

func (FailStmt) Name() string { return "fail" }
func (FailStmt) File() string { return sut.FileFail }
func (st FailStmt) String() string {
	return fmt.Sprintf("fail job %d gen %d", st.Job, st.Gen)
}
func (st FailStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	n, clk, err := s.Fail(ctx, st.Job, st.Gen, st.Retryable, st.Text)
	return program.Result{Out: model.Output{Rows: n}, Clock: clk, Err: err}
}
func (st FailStmt) Answer(r program.Result) string { return rowsAnswer(st.Job, st.Gen, r) }
func (st FailStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, at model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	return m.Fail(at, st.Job, st.Gen, st.Retryable, st.Text, r.Out.Rows)
}

// Apply: a failure that retries makes its job due once its backoff ends, no later than the
// backoff after as many attempts as the job had claims (every attempt began with a claim): the
// failing claim's generation, or the claims this world saw where it knows more (a stress
// worker's world sees only its own claims). Under an attempt limit a job is retried only
// before its last attempt, so no backoff is longer than the one after the last but one.
func (st FailStmt) Apply(w *program.World, s *program.Session, r program.Result, at model.Window) {
	if r.Err != nil {
		s.StatementFailed()
	}
	if st.Retryable && (r.Err == nil && r.Out.Rows == 1 || r.Err != nil && at.To == model.Never) {
		n := max(claimsOf(w, st.Job), st.Gen)
		if w.Life.MaxAttempts > 1 {
			n = min(n, w.Life.MaxAttempts-1)
		}
		w.DueAfter(at, w.Life.BackoffAfter(n))
	}
}
func (st FailStmt) Record(h program.Recording, r program.Result) {
	program.WriteOrFail(h, model.Input{Kind: model.OpFail, Job: st.Job, Gen: st.Gen, Retryable: st.Retryable, Text: st.Text}, r)
}

// claimsOf is how many claims of a job the run has seen return.
func claimsOf(w *program.World, job int64) int64 {
	n := int64(0)
	for _, t := range w.Claims {
		if t.ID == job {
			n++
		}
	}
	return n
}

// RenewStmt renews the claim (Job, Gen)'s lease for Lease from now.
type RenewStmt struct {
	Job, Gen int64
	Lease    time.Duration
}

func (RenewStmt) Name() string { return "renew" }
func (RenewStmt) File() string { return sut.FileRenew }
func (st RenewStmt) String() string {
	return fmt.Sprintf("renew job %d gen %d for %v", st.Job, st.Gen, st.Lease)
}
func (st RenewStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	n, clk, err := s.Renew(ctx, st.Job, st.Gen, st.Lease)
	return program.Result{Out: model.Output{Rows: n}, Clock: clk, Err: err}
}
func (st RenewStmt) Answer(r program.Result) string { return rowsAnswer(st.Job, st.Gen, r) }
func (st RenewStmt) Timed() bool                    { return program.TimedLease(st.Lease) }
func (st RenewStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, at model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	return m.Renew(at, st.Job, st.Gen, st.Lease, r.Out.Rows)
}

// Apply: the session's token now ends where the renewal moved it, so that a pause to its
// lease's edge finds the renewed edge.
func (st RenewStmt) Apply(_ *program.World, s *program.Session, r program.Result, at model.Window) {
	if r.Err != nil {
		s.StatementFailed()
		return
	}
	if r.Out.Rows == 1 {
		renewTokens(s, func(t program.Token) bool { return t.ID == st.Job && t.Gen == st.Gen }, at, st.Lease)
	}
}
func (st RenewStmt) Record(h program.Recording, r program.Result) {
	program.WriteOrFail(h, model.Input{Kind: model.OpRenew, Job: st.Job, Gen: st.Gen, Lease: st.Lease}, r)
}

// HeartbeatStmt is a worker's heartbeat, where leases are the worker's: every live lease it
// holds runs for Lease from now.
type HeartbeatStmt struct {
	Worker string
	Lease  time.Duration
}

func (HeartbeatStmt) Name() string { return "heartbeat" }
func (HeartbeatStmt) File() string { return sut.FileRenew }
func (st HeartbeatStmt) String() string {
	return fmt.Sprintf("heartbeat of %s for %v", st.Worker, st.Lease)
}
func (st HeartbeatStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	s.Worker = st.Worker
	ids, clk, err := s.Heartbeat(ctx, st.Lease)
	return program.Result{Jobs: ids, Clock: clk, Err: err}
}
func (st HeartbeatStmt) Answer(r program.Result) string {
	if r.Err != nil {
		return "error: " + oneLine(r.Err)
	}
	if len(r.Jobs) == 0 {
		return "none extended"
	}
	return "jobs " + strings.Trim(fmt.Sprint(r.Jobs), "[]") + " extended"
}
func (st HeartbeatStmt) Timed() bool { return program.TimedLease(st.Lease) }
func (st HeartbeatStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, at model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	return m.Heartbeat(at, st.Worker, st.Lease, r.Jobs)
}
func (st HeartbeatStmt) Apply(_ *program.World, s *program.Session, r program.Result, at model.Window) {
	if r.Err != nil {
		s.StatementFailed()
		return
	}
	extended := map[int64]bool{}
	for _, id := range r.Jobs {
		extended[id] = true
	}
	renewTokens(s, func(t program.Token) bool { return extended[t.ID] }, at, st.Lease)
}

// Record: one operation per job it extended.
func (st HeartbeatStmt) Record(h program.Recording, r program.Result) {
	in := model.Input{Kind: model.OpRenew, Worker: st.Worker, Lease: st.Lease}
	if r.Err != nil {
		h.Failed(in, r.Err)
		return
	}
	for _, id := range r.Jobs {
		h.Write(in, model.Output{Found: true, Job: id})
	}
}

// renewTokens moves the end of the session's newest token of each job which renewed to lease
// after at.
func renewTokens(s *program.Session, renewed func(program.Token) bool, at model.Window, lease time.Duration) {
	seen := map[int64]bool{}
	for i := len(s.Tokens) - 1; i >= 0; i-- {
		if t := &s.Tokens[i]; !seen[t.ID] && renewed(*t) {
			seen[t.ID] = true
			t.Lease, t.Until = lease, at.Shift(lease)
		}
	}
}

// LaterStmt enqueues a job due Delay after the enqueue runs (enqueue.sql's run-at delay).
type LaterStmt struct {
	program.EnqueueStmt
	Delay time.Duration
}

func (st LaterStmt) String() string { return fmt.Sprintf("enqueue due in %v", st.Delay) }
func (st LaterStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	id, clk, err := s.EnqueueAt(ctx, st.Payload, st.Delay)
	return program.Result{Out: model.Output{Job: id}, Clock: clk, Err: err}
}
func (st LaterStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, at model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	return m.EnqueueAt(r.Out.Job, at, st.Delay)
}
func (st LaterStmt) Apply(w *program.World, s *program.Session, r program.Result, at model.Window) {
	st.EnqueueStmt.Apply(w, s, r, at)
	if r.Err == nil || at.To == model.Never {
		w.DueAfter(at, st.Delay)
	}
}
func (st LaterStmt) Record(h program.Recording, r program.Result) {
	program.WriteOrFail(h, model.Input{Kind: model.OpEnqueue, Payload: st.Payload, Delay: st.Delay}, r)
}

// EffectStmt writes a job's business effect in the session's open transaction, which holds
// the job's completion (effect.sql); it takes effect when that transaction commits.
type EffectStmt struct{ Job int64 }

func (EffectStmt) Name() string      { return "effect" }
func (EffectStmt) File() string      { return sut.FileEffect }
func (st EffectStmt) String() string { return fmt.Sprintf("effect of job %d", st.Job) }
func (st EffectStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	clk, err := s.Effect(ctx, st.Job)
	return program.Result{Clock: clk, Err: err}
}
func (st EffectStmt) Answer(r program.Result) string {
	if r.Err != nil {
		return "error: " + oneLine(r.Err)
	}
	return "written"
}

// Judge: the ledger counts the effect; a transaction that does not commit leaves the model as
// it found it, the ledger with it.
func (st EffectStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, _ model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	m.Effect(st.Job)
	return nil
}
func (st EffectStmt) Apply(_ *program.World, s *program.Session, r program.Result, _ model.Window) {
	if r.Err != nil {
		s.StatementFailed()
	}
}
func (st EffectStmt) Record(h program.Recording, r program.Result) {
	program.WriteOrFail(h, model.Input{Kind: model.OpEffect, Job: st.Job}, r)
}

// EffectsStmt reads the business table's effect count of every job (effects.sql). Known holds
// the jobs a history records a count of (zero where the table has none).
type EffectsStmt struct{ Known []int64 }

func (EffectsStmt) Name() string      { return "effects" }
func (EffectsStmt) File() string      { return sut.FileEffects }
func (st EffectsStmt) String() string { return st.Name() }
func (st EffectsStmt) Exec(ctx context.Context, s *sut.Session) program.Result {
	counts, clk, err := s.Effects(ctx)
	return program.Result{Effects: counts, Clock: clk, Err: err}
}
func (st EffectsStmt) Answer(r program.Result) string {
	if r.Err != nil {
		return "error: " + oneLine(r.Err)
	}
	return fmt.Sprint(r.Effects)
}
func (st EffectsStmt) Judge(m *model.Queue, _ *program.Session, r program.Result, _ model.Window) error {
	if r.Err != nil {
		return program.QueueError(r.Err)
	}
	return m.CheckEffects(r.Effects)
}
func (st EffectsStmt) Apply(_ *program.World, s *program.Session, r program.Result, _ model.Window) {
	if r.Err != nil {
		s.StatementFailed()
	}
}
func (st EffectsStmt) Record(h program.Recording, r program.Result) {
	if r.Err != nil {
		return
	}
	n := map[int64]int64{}
	for _, c := range r.Effects {
		n[c.Job] += c.Count
	}
	for _, id := range st.Known {
		h.Read(model.Input{Kind: model.OpEffects, Job: id}, model.Output{Rows: n[id]})
	}
}

// rowsAnswer is the answer of a statement that changes one claim's job: its rows, or its error.
func rowsAnswer(job, gen int64, r program.Result) string {
	if r.Err != nil {
		return "error: " + oneLine(r.Err)
	}
	if r.Out.Rows == 1 {
		return fmt.Sprintf("job %d gen %d: 1 row", job, gen)
	}
	return fmt.Sprintf("job %d gen %d: %d rows", job, gen, r.Out.Rows)
}

func oneLine(err error) string { return textfmt.OneLine(err.Error()) }
