package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// scheduledRun is one run of a scheduled program: its sessions, the world its operations
// resolve against, its history and its trace.
type scheduledRun struct {
	scheduler *Scheduler
	t         verdict.Failer
	choices   chooser // nil when a saved program is replayed: nothing is drawn
	rec       *history.Recorder
	world     *program.World
	sessions  []*scheduledSession
	trace     []string
	issued    []program.Op // every step issued, in order: the program that replays the run
	// draining: the run's own operations are over; the drain's steps are not part of its program.
	draining     bool
	sessionCount int
	drawn        *drawnProgram
	// inProcedure: the steps issued now are a procedure's, which the program holds as one line.
	inProcedure bool
	// timed: a lease that ends by itself or a pause has come up, so the trace shows when each
	// statement ran on the database clock.
	timed bool
	// The pauses the run made and how long they lasted: a history records only statements.
	pauses int
	slept  time.Duration
	// aiming: a pause to a lease's edge has just ended, and the next statement sent is the one
	// it aimed; aimed is that statement, until it returns and its landing is known.
	aiming bool
	aimed  *record.Flight
}

// scheduledSession is one session of a scheduled run: its state in the run's world, its
// recording client, and how far it has come through its operations.
type scheduledSession struct {
	state      *program.Session
	client     *record.Client
	index      int
	parts      []program.Op // what is left of its current operation
	undrawn    int          // suffix operations not drawn yet
	inFlight   *record.Flight
	last       program.Stmt        // the last statement that returned
	traceIndex int                 // the trace line of the statement in flight
	waited     bool                // it was seen waiting for a row lock
	proxyFault *program.ProxyFault // a proxy fault waiting for the session's next statement
	// results collects what the session's statements answered, for a procedure's step.
	results []program.Result
}

// flatten is an operation's steps, compounds opened; each is checked for applicability when
// it comes up.
func flatten(op program.Op) []program.Op {
	if c, ok := op.(program.Compound); ok {
		var out []program.Op
		for _, p := range c.Parts() {
			out = append(out, flatten(p)...)
		}
		return out
	}
	return []program.Op{op}
}

// start makes n sessions live, idle and outside a transaction, recording into a new history,
// and empties the queue.
func (r *scheduledRun) start(n int) error {
	s := r.scheduler
	names := make([]string, n)
	for i := range names {
		names[i] = program.ScheduledSession(i)
	}
	r.world = program.NewWorld(s.in.Queue, names...)
	r.world.Clock = r.rec.DB
	r.world.Approach = s.approach.Carry()
	if s.proxy == nil {
		p, err := faultproxy.New()
		if err != nil {
			return err
		}
		s.proxy = p
	}
	for len(s.clients) < n {
		c, err := record.DialVia(s.ctx, s.in, program.ScheduledSession(len(s.clients)), nil, sut.SessionOptions{StatementTimeout: 30 * time.Second}, s.proxy)
		if err != nil {
			return err
		}
		s.clients = append(s.clients, c)
	}
	for i := 0; i < n; i++ {
		c := s.clients[i]
		if err := c.PrepareRun(s.ctx); err != nil {
			return err
		}
		c.RecordInto(r.rec)
		r.sessions = append(r.sessions, &scheduledSession{state: r.world.Sessions[i], client: c, index: i})
	}
	return s.in.Reset(s.ctx)
}

// sessionOf is the session an operation runs on (the first, for one that names none).
func (r *scheduledRun) sessionOf(op program.Op) *scheduledSession {
	name := ""
	switch o := op.(type) {
	case program.Step:
		name = o.On()
	case interface{ Session() string }: // a transaction, a pause to a worker's lease edge
		name = o.Session()
	}
	if s := r.world.Session(name); s != nil {
		for _, sess := range r.sessions {
			if sess.state == s {
				return sess
			}
		}
	}
	return r.sessions[0]
}

// abandon leaves nothing behind when a run ends early (a failure): no statement in flight, no
// transaction open. Nothing more is recorded.
func (r *scheduledRun) abandon() {
	for _, sess := range r.sessions {
		if sess.inFlight != nil && !sess.inFlight.Returned() {
			_ = r.scheduler.in.Terminate(context.Background(), sess.client.PID())
			sess.inFlight.Wait()
		}
		if sess.inFlight != nil || sess.state.InTxn {
			sess.client.Close()
		}
		sess.inFlight = nil
	}
}

// closeLeftovers leaves nothing open when a run's operations are over: a statement still
// waiting is ended with its backend, an open transaction rolls back. A run the scheduler drew
// never leaves either; a reduced program may.
func (r *scheduledRun) closeLeftovers() {
	for _, sess := range r.sessions {
		if sess.inFlight != nil {
			r.injectFault(sess, program.Terminate{S: sess.state.Name})
			r.quiesce(true)
		}
	}
	for _, sess := range r.sessions {
		if sess.state.InTxn {
			r.issue(sess, program.Rollback{S: sess.state.Name})
			r.quiesce(true)
		}
	}
}

// issue starts one step on its session: a fault is injected, a statement sent, a procedure
// (a pause) run. Every statement but the last is waited for (none of them waits for a row
// lock).
func (r *scheduledRun) issue(sess *scheduledSession, op program.Op) {
	if f, ok := op.(program.ProxyFault); ok {
		r.holdProxyFault(sess, f) // the program holds it where it is armed
		return
	}
	stmts := []program.Stmt(nil)
	if st, ok := op.(program.Step); ok {
		if stmts = st.Stmts(r.world); len(stmts) > 0 {
			r.armProxyFault(sess) // before the step, in the program and the trace as on the wire
		}
	}
	if !r.draining && !r.inProcedure {
		r.issued = append(r.issued, op)
	}
	if f, ok := op.(program.Fault); ok {
		r.injectFault(sess, f)
		return
	}
	if p, ok := op.(program.Procedure); ok {
		r.procedure(sess, p)
		return
	}
	if _, ok := op.(program.Step); !ok {
		r.harnessFailed(fmt.Errorf("%s: not a step a scheduler issues", op))
		return
	}
	sess.traceIndex = len(r.trace)
	r.trace = append(r.trace, r.traceText(sess, op))
	for i, stmt := range stmts {
		r.timed = r.timed || program.IsTimed(stmt)
		if r.alone(sess) {
			var strict bool
			if stmt, strict = program.Strictly(stmt); strict {
				r.trace[sess.traceIndex] += " (strict)"
			}
		}
		f := &record.Flight{Stmt: stmt}
		if r.aiming {
			r.aiming, r.aimed = false, f
		}
		if err := sess.client.Send(r.scheduler.ctx, f); err != nil {
			r.harnessFailed(err)
			return
		}
		sess.inFlight, sess.waited = f, false
		sess.state.Busy = true
		if i < len(stmts)-1 {
			f.Wait()
			if r.recordReturned(sess) != nil {
				return // the step's first statement failed: the rest is not sent
			}
		}
	}
}

// alone reports whether no session but sess has a statement in flight or a transaction open:
// a statement sess sends now races nothing.
func (r *scheduledRun) alone(sess *scheduledSession) bool {
	for _, other := range r.sessions {
		if other != sess && (other.inFlight != nil || other.state.InTxn) {
			return false
		}
	}
	return true
}

// procedure runs an operation that chooses its own steps. A pause, plain or to the edge of
// the session's lease, stops the whole schedule while real time passes: every other session's
// statement in flight stays in flight, as one waiting for a row lock does, and is handled when
// the schedule moves on. The steps a procedure issues (a drain written into a program) run to
// their end one at a time, and the program keeps the procedure's line, not theirs.
func (r *scheduledRun) procedure(sess *scheduledSession, p program.Procedure) {
	line := len(r.trace)
	r.trace = append(r.trace, r.traceText(sess, p))
	before := r.slept
	r.inProcedure = true
	err := p.Run(r.scheduler.ctx, r)
	r.inProcedure = false
	if err != nil {
		r.harnessFailed(err)
	}
	if slept := r.slept - before; slept > 0 {
		r.timed = true
		r.pauses++
		if _, ok := p.(program.Near); ok {
			r.trace[line] += fmt.Sprintf(" -> slept %v", slept.Round(time.Millisecond))
		}
	}
	if _, ok := p.(program.Near); ok {
		// The pause's own step is over: the statement it aimed is the next one sent.
		r.world.Approach.Next(model.Window{From: -1})
		r.aiming = true
	}
}

// World, Do and Sleep make the scheduler a runner of procedures (the drain): each step runs
// alone, to its end.
func (r *scheduledRun) World() *program.World { return r.world }

func (r *scheduledRun) Do(ctx context.Context, st program.Step) ([]program.Result, error) {
	sess := r.sessionOf(st)
	if !st.Applicable(r.world) {
		return nil, nil
	}
	sess.results = nil
	r.issue(sess, st)
	for sess.inFlight != nil {
		r.quiesce(true)
	}
	return sess.results, nil
}

func (r *scheduledRun) Sleep(ctx context.Context, d time.Duration) error {
	if err := program.Wait(ctx, d, nil); err != nil {
		return err
	}
	r.slept += d
	return nil
}
