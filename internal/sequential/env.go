package sequential

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/external"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// lockTimeout: in a sequential run nothing ever legitimately waits for a row lock, so any wait
// is a finding (properties 5 and 9); a short timeout turns it into an error fast.
const lockTimeout = 20 * time.Millisecond

// Env is the sequential world: the installed queue, the model, a session per name. Every
// queue statement runs between two readings of the database clock, and the model judges it at
// that window of database time. Sessions survive Reset so that a property run costs a
// TRUNCATE, not connections.
type Env struct {
	In    *sut.Installed
	Model *model.Queue
	W     *program.World
	conns map[string]*sut.Session
	// dest is where workers call with a job's external effect (nil: nowhere).
	dest *effectdest.Dest

	Trace []string     // each executed operation with the queue's program.Answers
	Ops   []program.Op // the operations behind Trace, for reducing and saving a failure
	// Counts accumulates what the steps exercised until the caller clears it (Reset does not).
	Counts program.Counts
	// Last is the error the last program stopped with: what a failing rapid run reported.
	Last error
	// NotPromised holds what the queue did that it does not promise (a stale completion of an
	// at-least-once queue), each with the program that showed it, until the caller clears it
	// (Reset does not).
	NotPromised []*verdict.Finding
	unpromised  *model.Violation // the current step's, until the step is traced

	answers []string // the current operation's program.Answers
	step    program.Answers
	stepAt  model.Window // database time from the current step's first statement to its last
	timed   bool         // a lease of its own length or a real pause ran: traces show db time
}

// NewEnv connects the sessions for a queue already installed: the reader, the workers and
// the lockers.
func NewEnv(ctx context.Context, in *sut.Installed, workers, lockers int) (*Env, error) {
	names := []string{program.Reader}
	for i := 0; i < workers; i++ {
		names = append(names, program.WorkerName(i))
	}
	for i := 0; i < lockers; i++ {
		names = append(names, program.LockerName(i))
	}
	w := program.NewWorld(in.Queue, names...)
	w.NoWaits, w.LocksOnlyInTxns = true, true
	e := &Env{In: in, W: w, conns: map[string]*sut.Session{}}
	for _, n := range names {
		if err := e.connect(ctx, n); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, e.Reset(ctx)
}

func (e *Env) connect(ctx context.Context, name string) error {
	s, err := e.In.Connect(ctx, name, sut.SessionOptions{LockTimeout: lockTimeout, StatementTimeout: 30 * time.Second})
	if err != nil {
		return err
	}
	e.conns[name] = s
	return nil
}

// UseDest makes d the destination workers call with a job's external effect: the external
// operations apply from now on, and every check compares what d holds with the model (property
// 17). The caller owns d and closes it; each Reset empties it with the queue.
func (e *Env) UseDest(d *effectdest.Dest) {
	e.dest, e.W.Dest, e.W.Can.External = d, d.URL(), true
	d.Reset()
}

// World is the environment's world, for procedures.
func (e *Env) World() *program.World { return e.W }

// Reset ends every open transaction, empties the queue and starts a fresh model, so the next
// run begins from exactly the state a fresh install would have.
func (e *Env) Reset(ctx context.Context) error {
	for _, s := range e.W.Sessions {
		c := e.conns[s.Name]
		switch {
		case c == nil || c.Conn().IsClosed():
			if err := e.connect(ctx, s.Name); err != nil {
				return err
			}
		case s.InTxn || c.Conn().PgConn().TxStatus() != 'I':
			// Also a transaction the queue's own claim keeps open (TxBound).
			if err := c.Rollback(ctx); err != nil {
				return fmt.Errorf("pgqcheck: ending %s's transaction: %w", s.Name, err)
			}
		}
	}
	e.W.Reset()
	if e.dest != nil {
		e.dest.Reset()
	}
	if err := e.In.Reset(ctx); err != nil {
		return err
	}
	e.Model = model.New(e.In.Queue.Order)
	e.Model.Shape = e.In.Queue.Shape()
	e.Trace, e.Ops, e.Last, e.timed = nil, nil, nil, false
	return nil
}

// Close ends every session.
func (e *Env) Close() {
	for _, c := range e.conns {
		c.Close()
	}
}

// Step runs one operation, records it in the trace, checks the queue's snapshot against the
// model, and returns the violation or error it met. A harness failure (not a verdict on the
// queue) is returned as a *HarnessError.
func (e *Env) Step(ctx context.Context, op program.Op) error {
	_, txn := op.(program.Transaction)
	if c, ok := op.(program.Compound); ok && !txn {
		// Each part is a step of its own, checked and traced alone: programs read, count,
		// save and reduce in simple operations.
		for _, part := range c.Parts() {
			if !part.Applicable(e.W) {
				continue
			}
			if err := e.Step(ctx, part); err != nil {
				return err
			}
		}
		return nil
	}
	e.answers, e.step, e.stepAt = nil, program.Answers{}, model.Window{From: -1}
	var err error
	switch o := op.(type) {
	case program.Procedure:
		d, drain := o.(program.Drain)
		e.Model.Draining = drain
		err = o.Run(ctx, e)
		e.Model.Draining = false
		if err == nil && drain {
			err = e.drained(d)
		}
	case program.Step:
		_, err = e.Do(ctx, o)
	case program.Transaction:
		err = e.transaction(ctx, o)
	default:
		err = &program.HarnessError{Err: fmt.Errorf("%s: not an operation a sequential program runs", op)}
	}
	e.Counts.Observe(op, e.step, err)
	line := op.String()
	if a := e.answer(op); a != "" {
		line = fmt.Sprintf("%-28s -> %s", line, a)
	}
	if e.timed && e.stepAt.From >= 0 {
		line += "  @" + e.stepAt.String()
	}
	if l, ok := e.W.Approach.Next(e.stepAt); ok {
		line += " (" + l.String() + ")"
	}
	e.Trace = append(e.Trace, line)
	e.Ops = append(e.Ops, op)
	if v := e.unpromised; v != nil {
		e.unpromised = nil
		e.Counts.NotPromised++
		e.NotPromised = append(e.NotPromised, &verdict.Finding{Violation: v, Queue: e.In.Queue.Name, Source: e.In.Queue.Source, Mode: program.Sequential,
			Program: &program.Program{Header: map[string]string{}, Ops: e.Executed()}, Trace: e.Program(), Model: e.Model.String()})
	}
	if err == nil {
		checked := time.Now()
		err = e.Check(ctx)
		e.W.CheckCost = time.Since(checked)
	}
	e.Last = err
	return err
}

// transaction runs a transaction operation as one step. Its claims and completions are judged
// as they return (nothing else runs until it ends, and its row locks keep every other session
// off its rows meanwhile); a transaction that does not commit leaves the model as it found it.
func (e *Env) transaction(ctx context.Context, tx program.Transaction) error {
	s := e.W.Session(tx.Session())
	if s == nil {
		return &program.HarnessError{Err: fmt.Errorf("%s: no session %q in this world", tx, tx.Session())}
	}
	before, committed := e.Model.Clone(), false
	s.InTxnOp = true
	for _, part := range tx.Parts() {
		if !part.Applicable(e.W) {
			continue
		}
		var err error
		switch p := part.(type) {
		case program.Procedure:
			err = p.Run(ctx, e)
		case program.Step:
			wasAborted := s.Aborted
			commits := false
			if c, ok := p.(interface{ Commits(*program.World) bool }); ok {
				commits = c.Commits(e.W)
			}
			_, err = e.Do(ctx, p)
			if commits && err == nil && !wasAborted {
				committed = true
			}
		}
		if err != nil {
			return err
		}
	}
	if !committed {
		e.Model = before
	}
	return nil
}

// answer is the operation's answers in words.
func (e *Env) answer(op program.Op) string {
	if o, ok := op.(program.Worded); ok {
		if words := o.Words(e.W, e.answers, e.step); words != "" {
			return words
		}
	}
	return strings.Join(e.answers, "; ")
}

// Do runs one step's statements, each checked by the model as it returns.
func (e *Env) Do(ctx context.Context, st program.Step) ([]program.Result, error) {
	s := e.W.Session(st.On())
	if s == nil {
		return nil, &program.HarnessError{Err: fmt.Errorf("%s: no session %q in this world", st, st.On())}
	}
	if f, ok := st.(program.Fault); ok {
		return nil, e.fault(ctx, s, f.Injects())
	}
	if _, crash := st.(program.Crash); crash && e.W.TxBound && s.HoldsClaimTxn {
		// A worker whose claim holds its transaction dies with its connection: the transaction,
		// the lease, ends, and the job is ready again.
		held, _ := s.Newest(0)
		st.Stmts(e.W)
		e.Model.Expire(model.Window{}, held.ID)
		return nil, e.fault(ctx, s, program.FaultTerminate)
	}
	var out []program.Result
	for _, stmt := range st.Stmts(e.W) {
		floor := e.W.Clock.Latest()
		r := stmt.Exec(ctx, e.conns[s.Name])
		out = append(out, r)
		at := e.W.Clock.Window(r.Clock, floor)
		if r.Clock.Known() {
			if e.stepAt.From < 0 {
				e.stepAt.From = at.From
			}
			e.stepAt.To = at.To
		}
		e.timed = e.timed || program.IsTimed(stmt)
		if a := stmt.Answer(r); a != "" {
			e.answers = append(e.answers, a)
		}
		program.Count(&e.step.Counts, stmt, r)
		err := stmt.Judge(e.Model, s, r, at)
		var v *model.Violation
		if errors.As(err, &v) && v.NotPromised {
			if e.unpromised == nil {
				e.unpromised = v
			}
			err = nil
		}
		e.W.Apply(s, stmt, r, at)
		if err != nil {
			return out, err
		}
		if e.W.BackendsEnded {
			e.W.BackendsEnded = false
			if err := e.reconnectEnded(ctx); err != nil {
				return out, &program.HarnessError{Err: err}
			}
		}
	}
	return out, nil
}

// reconnectEnded reconnects the sessions whose backend is gone. On a queue whose claims hold a
// transaction, expiring a job ends the backend of the worker that held it, and that worker
// comes back as a new life, without the transaction.
func (e *Env) reconnectEnded(ctx context.Context) error {
	var pids []int32
	for _, c := range e.conns {
		pids = append(pids, int32(c.PID))
	}
	rows, err := e.In.Admin().Query(ctx, `SELECT pid FROM pg_stat_activity WHERE pid = ANY($1)`, pids)
	if err != nil {
		return err
	}
	alive := map[uint32]bool{}
	for rows.Next() {
		var pid int32
		if err := rows.Scan(&pid); err != nil {
			rows.Close()
			return err
		}
		alive[uint32(pid)] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range e.W.Sessions {
		if c := e.conns[s.Name]; c != nil && !alive[c.PID] {
			c.Close()
			e.W.Lost(s)
			if err := e.connect(ctx, s.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// Sleep lets real time pass on both clocks.
func (e *Env) Sleep(ctx context.Context, d time.Duration) error {
	if err := program.Wait(ctx, d, nil); err != nil {
		return &program.HarnessError{Err: err}
	}
	e.timed = true
	e.step.Slept += d
	return nil
}

// fault cancels or terminates a session that is idle in its transaction (nothing is ever in
// flight in a sequential run): the transaction ends, and its row locks with it.
func (e *Env) fault(ctx context.Context, s *program.Session, k program.BackendFault) error {
	c := e.conns[s.Name]
	locks := s.Locks
	switch k {
	case program.FaultInterrupt:
		if err := e.In.CancelIdle(ctx, c); err != nil {
			return &program.HarnessError{Err: err}
		}
		s.EndTxn()
	case program.FaultTerminate:
		if err := e.In.Terminate(ctx, c.PID); err != nil {
			return &program.HarnessError{Err: err}
		}
		c.Close()
		e.W.Lost(s)
		if err := e.connect(ctx, s.Name); err != nil {
			return &program.HarnessError{Err: err}
		}
	}
	for _, id := range locks {
		e.Model.Unlock(id)
	}
	return nil
}

// drained checks what a drain promises: every job no row lock holds is done, completed once, or
// in another end of a job's life (dead, where the queue has a lifecycle: property 15).
func (e *Env) drained(d program.Drain) error {
	p, life := model.PRecovery, e.W.Can.Fail
	if life {
		p = model.PDrain
	}
	for _, j := range e.Model.Jobs() {
		over := j.State.Terminal()
		if !j.Locked && (!over || e.Model.Completions(j.ID) > 1) {
			return model.Violate(p, "after every lease lapsed and the queue drained, job %d is %s with %d completions", j.ID, j.State, e.Model.Completions(j.ID))
		}
	}
	return nil
}

// Check compares the queue's snapshot with the model and, where the queue writes business
// effects, its business table with the ledger.
func (e *Env) Check(ctx context.Context) error {
	floor := e.W.Clock.Latest()
	reader := e.conns[program.Reader]
	rows, clk, err := reader.Snapshot(ctx)
	if err != nil {
		return program.QueueError(err)
	}
	if err := e.Model.CheckSnapshot(e.W.Clock.Window(clk, floor), rows); err != nil {
		return err
	}
	if e.dest != nil {
		if err := external.Check(e.Model, e.dest.Counts()); err != nil {
			return err
		}
	}
	if !e.W.Can.Effect {
		return nil
	}
	effects, _, err := reader.Effects(ctx)
	if err != nil {
		return program.QueueError(err)
	}
	return e.Model.CheckEffects(effects)
}

// Program renders the trace as a numbered list, for failure messages and reports.
func (e *Env) Program() string { return numbered(e.Trace) }

func numbered(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%4d. %s\n", i+1, l)
	}
	return b.String()
}

// Executed returns the operations of env's last run that actually ran.
func (e *Env) Executed() []program.Op { return append([]program.Op(nil), e.Ops...) }
