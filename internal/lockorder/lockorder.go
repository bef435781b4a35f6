// Package lockorder holds the lock-order check of a queue's business effects: completions
// whose effects (effect.sql, in the completion's transaction) lock business rows, run at the
// same moment by a fixed interleaving, so that two which lock the same rows in opposite orders
// deadlock (SQLSTATE 40P01) every time rather than once in a while. The deadlock is a finding
// of property 9 that names both statements and both jobs. Under a bounded retry policy the
// worker whose transaction Postgres aborted runs it again, and the retry must not duplicate
// the effect: after the run, every job is done with exactly one effect in the business table
// (property 16).
package lockorder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/pgerr"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Mode names the search of a lock-order finding, beside the program package's modes.
const Mode program.Mode = "lock order"

// RetryPolicy is how a worker treats a completion's transaction that Postgres aborted: it runs
// the whole transaction again, up to Attempts in all, when the error's SQLSTATE is one of
// Codes.
type RetryPolicy struct {
	Attempts int
	Codes    []string
}

var (
	// NoRetry: an aborted transaction is not run again, so a deadlock is the run's finding.
	NoRetry = RetryPolicy{Attempts: 1}
	// Bounded runs a transaction aborted by a deadlock or a serialization failure up to three
	// times in all.
	Bounded = RetryPolicy{Attempts: 3, Codes: []string{"40P01", "40001"}}
)

func (p RetryPolicy) retries(err error, attempt int) bool {
	return attempt < p.Attempts && slices.Contains(p.Codes, pgerr.Code(err))
}

// Outcome is what a run found.
type Outcome struct {
	// Finding is the broken promise (nil: every promise held): the deadlock, where the policy
	// does not retry it; else a retried transaction's duplicate or lost effect.
	Finding *verdict.Finding
	// Deadlocks is every deadlock the run met, retried or not, each naming both statements.
	Deadlocks []*model.Violation
	Retries   int                 // transactions run again
	Effects   []model.EffectCount // the business table at the end
	Trace     []string
}

// The interleaving, with the business rows A and B that w1's and w2's effects both lock: w0's
// effect holds A (not B) while its completion waits; w2's effect, which locks A first, waits
// for it; then w1's, which locks B first, takes B and waits for A, queued behind w2. When w0
// commits, w2 takes A (Postgres grants a row's waiters in order) and asks for B: where w1 and
// w2 lock A and B in opposite orders, each now holds what the other asks for, every time; in
// one order, w1 asked for A first and holds nothing w2 needs. Claims hand out jobs 1, 2 and 3
// to w0, w1 and w2, which a business effect maps to its rows (testdata/mutants/lock-order-opposite,
// testdata/lockorder/one-order).
const workers = 3

// waiters is the order in which the waiting effects start.
var waiters = []int{2, 1}

// Run runs the interleaving once on a freshly reset queue, which must ship effect.sql.
func Run(ctx context.Context, in *sut.Installed, policy RetryPolicy) (*Outcome, error) {
	if !in.Queue.Can().Effect {
		return nil, fmt.Errorf("lockorder: %s has no %s", in.Queue.Source, sut.FileEffect)
	}
	if err := in.Reset(ctx); err != nil {
		return nil, err
	}
	r := &run{ctx: ctx, in: in, policy: policy, out: &Outcome{}}
	defer r.close()
	for i := 0; i < workers; i++ {
		s, err := in.Connect(ctx, program.WorkerName(i), sut.SessionOptions{StatementTimeout: 30 * time.Second})
		if err != nil {
			return nil, err
		}
		r.sessions = append(r.sessions, s)
	}
	if err := r.claim(); err != nil {
		return nil, err
	}
	if err := r.interleave(); err != nil {
		return nil, err
	}
	return r.out, r.settle()
}

type run struct {
	ctx      context.Context
	in       *sut.Installed
	policy   RetryPolicy
	out      *Outcome
	sessions []*sut.Session
	tokens   []program.Token
}

func (r *run) close() {
	for _, s := range r.sessions {
		s.Close()
	}
}

// do runs one statement on worker i and traces it.
func (r *run) do(i int, st program.Stmt) program.Result {
	res := st.Exec(r.ctx, r.sessions[i])
	r.traced(i, st, res, "")
	return res
}

func (r *run) traced(i int, st program.Stmt, res program.Result, note string) {
	line := fmt.Sprintf("%s %s", r.sessions[i].Name, st)
	if a := st.Answer(res); a != "" {
		line = fmt.Sprintf("%-28s -> %s", line, a)
	}
	r.out.Trace = append(r.out.Trace, line+note)
}

// claim enqueues a job per worker and has each claim one, in order.
func (r *run) claim() error {
	for i := 0; i < workers; i++ {
		if res := r.do(0, program.EnqueueStmt{Payload: fmt.Sprintf(`{"n":%d}`, i+1)}); res.Err != nil {
			return res.Err
		}
	}
	for i := 0; i < workers; i++ {
		res := r.do(i, program.ClaimStmt{Lease: program.LongLease, Worker: r.sessions[i].Name})
		if res.Err != nil || !res.Out.Found {
			return fmt.Errorf("lockorder: %s's claim found no job (%v): the interleaving needs one per worker", r.sessions[i].Name, res.Err)
		}
		r.tokens = append(r.tokens, program.Token{ID: res.Out.Job, Gen: res.Out.Gen})
	}
	return nil
}

// effectOf is worker i's effect statement.
func (r *run) effectOf(i int) program.Stmt { return lifecycle.EffectStmt{Job: r.tokens[i].ID} }

// interleave holds the rows with w0's effect, starts w1's and w2's behind it, commits w0's
// completion, and ends each waiter's transaction as its effect returns.
func (r *run) interleave() error {
	if err := r.begin(0); err != nil {
		return err
	}
	if res := r.do(0, r.effectOf(0)); res.Err != nil {
		return fmt.Errorf("lockorder: w0's effect, alone: %w", res.Err)
	}
	type returned struct {
		i   int
		res program.Result
	}
	done := make(chan returned, workers)
	for _, i := range waiters {
		if err := r.begin(i); err != nil {
			return err
		}
		go func() { done <- returned{i, r.effectOf(i).Exec(r.ctx, r.sessions[i])} }()
		if err := r.waitBlocked(i); err != nil {
			return err
		}
		r.out.Trace = append(r.out.Trace, fmt.Sprintf("%s %s [waits for a lock]", r.sessions[i].Name, r.effectOf(i)))
	}
	if err := r.complete(0); err != nil {
		return err
	}
	var failed []returned
	for n := 1; n < workers; n++ {
		var got returned
		select {
		case got = <-done:
		case <-time.After(30 * time.Second):
			return fmt.Errorf("lockorder: the waiting effects did not return within 30 s")
		}
		r.traced(got.i, r.effectOf(got.i), got.res, "")
		if got.res.Err != nil {
			failed = append(failed, got)
			continue
		}
		if err := r.complete(got.i); err != nil {
			return err
		}
	}
	for _, f := range failed {
		if err := r.aborted(f.i, f.res.Err, 1); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) begin(i int) error {
	if res := r.do(i, program.BeginStmt{}); res.Err != nil {
		return res.Err
	}
	return nil
}

// complete presents worker i's token in its open transaction, and commits when it changed one
// row, as a worker completing with its effect does.
func (r *run) complete(i int) error {
	res := r.do(i, program.CompleteStmt{Job: r.tokens[i].ID, Gen: r.tokens[i].Gen})
	end := program.RollbackStmt
	if res.Err == nil && res.Out.Rows == 1 {
		end = program.CommitStmt
	}
	if e := r.do(i, end); e.Err != nil {
		return e.Err
	}
	if res.Err != nil {
		return r.aborted(i, res.Err, 1)
	}
	return nil
}

// aborted handles a statement of worker i's transaction that failed on attempt n: it ends the
// transaction, names a deadlock, and runs the transaction again where the policy says so.
func (r *run) aborted(i int, err error, n int) error {
	if pgerr.Code(err) == "" {
		return err // the harness's, not the queue's
	}
	if r.sessions[i].Conn().PgConn().TxStatus() != 'I' {
		if e := r.do(i, program.RollbackStmt); e.Err != nil {
			return e.Err
		}
	}
	v := r.deadlock(i, err)
	if pgerr.Code(err) == "40P01" {
		r.out.Deadlocks = append(r.out.Deadlocks, v)
	}
	if !r.policy.retries(err, n) {
		if r.out.Finding == nil {
			r.out.Finding = r.finding(v)
		}
		return nil
	}
	r.out.Retries++
	r.out.Trace = append(r.out.Trace, fmt.Sprintf("%s runs its transaction again (attempt %d of %d)", r.sessions[i].Name, n+1, r.policy.Attempts))
	if err := r.begin(i); err != nil {
		return err
	}
	if res := r.do(i, r.effectOf(i)); res.Err != nil {
		return r.aborted(i, res.Err, n+1)
	}
	return r.complete(i)
}

// deadlock is worker i's failed statement as a finding: for a deadlock, both statements and
// both jobs, the other found among the backends Postgres names.
func (r *run) deadlock(i int, err error) *model.Violation {
	var se *sut.StatementError
	file := "statement"
	if errors.As(err, &se) {
		file = se.File
	}
	if pgerr.Code(err) != "40P01" {
		return model.Violate(model.PNoErrors, "%s's %s for job %d failed with SQLSTATE %s: %s", r.sessions[i].Name, file, r.tokens[i].ID, pgerr.Code(err), textfmt.OneLine(err.Error()))
	}
	named := pgerr.DeadlockPIDs(err)
	var others []string
	for j, s := range r.sessions {
		if j != i && named[s.PID] {
			others = append(others, fmt.Sprintf("%s's %s for job %d", s.Name, r.effectOf(j).Name()+" ("+sut.FileEffect+")", r.tokens[j].ID))
		}
	}
	if len(others) == 0 {
		others = []string{"another session (Postgres's detail names no backend of this run)"}
	}
	return model.Violate(model.PNoErrors, "deadlock (SQLSTATE 40P01) between %s's effect (%s) for job %d and %s, each in the transaction of its job's completion: they lock the business rows in opposite orders; Postgres aborted %s's",
		r.sessions[i].Name, file, r.tokens[i].ID, strings.Join(others, ", "), r.sessions[i].Name)
}

func (r *run) finding(v *model.Violation) *verdict.Finding {
	return &verdict.Finding{Violation: v, Queue: r.in.Queue.Name, Source: r.in.Queue.Source, Mode: Mode, Trace: numbered(r.out.Trace)}
}

// settle checks what the run left: every job done, each with exactly one effect, once every
// transaction ended (a finding already made stands; a job its aborted transaction left
// running is then expected).
func (r *run) settle() error {
	res := r.do(0, lifecycle.EffectsStmt{})
	if res.Err != nil {
		return res.Err
	}
	r.out.Effects = res.Effects
	snap := r.do(0, program.SnapshotStmt{})
	if snap.Err != nil {
		return snap.Err
	}
	if r.out.Finding != nil {
		return nil
	}
	counts := map[int64]int64{}
	for _, e := range res.Effects {
		counts[e.Job] += e.Count
	}
	for _, row := range snap.Rows {
		switch {
		case row.State != model.Done:
			r.out.Finding = r.finding(model.Violate(model.PEffects, "job %d is %s after every transaction ended, its completion retried %d times in the run", row.ID, row.State, r.out.Retries))
		case counts[row.ID] != 1:
			r.out.Finding = r.finding(model.Violate(model.PEffects, "job %d is done with %d effects in the business table: the retried transaction must leave exactly one", row.ID, counts[row.ID]))
		}
		if r.out.Finding != nil {
			return nil
		}
	}
	return nil
}

// waitBlocked waits until worker i's statement waits for a lock another session holds.
func (r *run) waitBlocked(i int) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pids, err := r.in.Blocked(r.ctx, r.sessions[i].PID)
		if err != nil {
			return err
		}
		if len(pids) > 0 {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return fmt.Errorf("lockorder: %s's effect neither returned nor waited for a lock within 10 s: its effect locks no row w0's holds", r.sessions[i].Name)
}

func numbered(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%4d. %s\n", i+1, l)
	}
	return b.String()
}
