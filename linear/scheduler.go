package linear

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"pgqcheck/internal/rapidrun"
	"pgqcheck/linear/check"
	"pgqcheck/linear/history"
	"pgqcheck/linear/record"
	"pgqcheck/linear/report"

	"pgregory.net/rapid"

	"pgqcheck/faultproxy"
	"pgqcheck/internal/pgerr"
	"pgqcheck/internal/textfmt"
	"pgqcheck/model"
	"pgqcheck/program"
	"pgqcheck/sut"
)

// ScheduledConfig shapes scheduled mode. Zero fields take the defaults.
type ScheduledConfig struct {
	Sessions  int // concurrent sessions at most, 2 or 3 (default 3)
	MaxPrefix int // sequential operations before the concurrent part, beyond the first enqueues (default 5)
	MaxSuffix int // operations per concurrent session (default 5)
	// Name names the report folder (default the queue's name). A failing run writes its report
	// to the same folder each time, so the folder left is the shrunk failure's.
	Name      string
	ReportDir string // root of the report folder (default os.TempDir())
	// CheckTimeout bounds the linearizability check of one run (default 30s).
	CheckTimeout time.Duration
	// Trace, when set, receives every run's program, interleaving and verdict.
	Trace io.Writer
}

func (c ScheduledConfig) withDefaults(q *sut.Queue) ScheduledConfig {
	if c.Sessions < 2 {
		c.Sessions = 3
	}
	if c.MaxPrefix <= 0 {
		c.MaxPrefix = 5
	}
	if c.MaxSuffix <= 0 {
		c.MaxSuffix = 5
	}
	if c.Name == "" {
		c.Name = q.Name
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = 30 * time.Second
	}
	return c
}

// Scheduler runs scheduled programs against one installed queue: it decides which session
// moves next, sees statements wait for row locks in Postgres (pg_blocking_pids) rather than
// guessing with sleeps, and injects the faults the program names. Its clients record the
// history; the operations are the program package's. Its sessions survive from one run to the
// next (a run costs a reset, not connections). It is not safe for concurrent use.
type Scheduler struct {
	ctx     context.Context
	in      *sut.Installed
	cfg     ScheduledConfig
	clients []*record.Client
	proxy   *faultproxy.Proxy // every session connects through it, for the drawn proxy faults
	last    *program.Finding  // the last failing run's
	// lastMarks locate the last failing run's choices in its fuzz input, for ShrinkInput.
	lastMarks []mark
	// trace is the last run's interleaving with the queue's answers, held or not.
	trace string
	// history and ran are the last run's history and the program that replays it, held or not.
	history *history.History
	ran     *program.Program
	// Counts is what the last run's history exercised.
	Counts program.Counts
}

// Trace is the last run's interleaving with the queue's answers, whether it held or failed.
func (s *Scheduler) Trace() string { return s.trace }

// NewScheduler prepares scheduled mode for an installed queue. Close it when done.
func NewScheduler(ctx context.Context, in *sut.Installed, cfg ScheduledConfig) *Scheduler {
	return &Scheduler{ctx: ctx, in: in, cfg: cfg.withDefaults(in.Queue)}
}

// Last is the last failing run's finding: after a rapid search, the shrunk failure's (rapid
// ends by replaying it), or, when that replay held, the last run that failed. Nil when no run
// failed.
func (s *Scheduler) Last() *program.Finding { return s.last }

// Close ends every session, whatever it was doing, and the fault proxy.
func (s *Scheduler) Close() {
	for _, c := range s.clients {
		c.Close()
	}
	if s.proxy != nil {
		s.proxy.Close()
	}
}

// Property is the rapid property of scheduled mode: draw a program and a schedule, run them,
// drain the queue, and check the history. It fails with the broken property.
func (s *Scheduler) Property(t *rapid.T) { s.run(t, &rapidChoices{t: t}, nil) }

// RunBytes is one run of scheduled mode whose choices come from data (FuzzScheduled's input),
// one byte a choice, as Property's would come from rapid. It fails t with the broken property.
func (s *Scheduler) RunBytes(t Failer, data []byte) { s.run(t, &byteChoices{data: data}, nil) }

// RunProgram runs a saved scheduled program: its lines are the interleaving. It fails t with
// the broken property.
func (s *Scheduler) RunProgram(t Failer, p *program.Program) { s.run(t, nil, p) }

// Failer is what a failing run reports to: a *rapid.T, or a *testing.T under the fuzzer.
type Failer = program.Failer

// srun is one run of a scheduled program.
type srun struct {
	s     *Scheduler
	t     Failer
	c     chooser
	rec   *history.Recorder
	w     *program.World
	conns []*record.Client
	x     []*sched // per session
	trace []string
	ran   []program.Op // every step issued, in order: the program that replays the run
	// draining: the run's own operations are over; the drain's steps are not part of its program.
	draining  bool
	sessions  int
	drawnProg *drawn
	// inProcedure: the steps issued now are a procedure's, which the program holds as one line.
	inProcedure bool
	// timed: a lease that ends by itself or a pause has come up, so the trace shows when each
	// statement ran on the database clock.
	timed bool
	// The pauses the run made and how long they lasted: a history records only statements.
	pauses int
	slept  time.Duration
}

// sched is a session's scheduling state.
type sched struct {
	s     *program.Session
	c     *record.Client
	idx   int
	parts []program.Op // what is left of its current operation
	left  int          // suffix operations not drawn yet
	fl    *record.Flight
	line  int                 // the trace line of the statement in flight
	waits bool                // it was seen waiting for a row lock
	fault *program.ProxyFault // a proxy fault waiting for the session's next statement
	// results collects what the session's statements answered, for a procedure's step.
	results []program.Result
}

func (s *Scheduler) run(t Failer, c chooser, saved *program.Program) {
	t.Helper()
	var d *drawn
	n := 0
	if saved != nil {
		n = saved.ScheduledSessions()
	} else {
		d = drawProgram(c, s.cfg, capabilities(s.in.Queue))
		n = len(d.lengths)
	}
	r := &srun{s: s, t: t, c: c, rec: history.NewRecorder(true), sessions: n}
	s.Counts, s.history, s.ran = program.Counts{}, nil, nil
	// Under rapid, a failure stands until a later run fails: with real time, rapid's replay of
	// a failing run may hold (which statement lands first past a lease's edge depends on the
	// run's own timing), and what the failing run saw is a broken promise all the same, since
	// the model judges only by measured windows. A replay of one input or program stands alone.
	if _, searching := c.(*rapidChoices); !searching {
		s.last = nil
	}
	defer r.abandon()
	if err := r.start(n); err != nil {
		s.last = nil
		t.Fatalf("harness: %v", err)
	}
	if saved != nil {
		for _, op := range saved.Ops {
			r.replayLine(op)
		}
		r.settle()
	} else {
		for _, op := range d.prefix {
			x := r.session(op)
			x.parts = flatten(op)
			for r.pending(x) {
				r.step(x)
				r.quiesce(false)
			}
		}
		for i, k := range d.lengths {
			r.x[i].left = k
		}
		r.trace = append(r.trace, "-- concurrent --")
		r.concurrent(d)
	}
	r.dropFaults()
	r.knowTable()
	r.trace = append(r.trace, "-- drain --")
	r.draining = true
	if err := (program.Drain{S: program.ScheduledSession(0)}).Run(s.ctx, r); err != nil {
		r.harness(err)
	}
	h := r.rec.History(s.in.Queue.Source, "scheduled")
	h.Shape = s.in.Queue.Shape()
	h.Drained = true
	h.Program = r.listing()
	s.trace, s.history, s.ran = h.Program, h, r.program(nil)
	s.Counts = check.CountOps(h)
	s.Counts.RealPauses, s.Counts.PausedMillis = int64(r.pauses), r.slept.Milliseconds()
	v := check.Check(h, s.cfg.CheckTimeout)
	s.Counts.NotPromised = int64(len(v.NotPromised))
	if s.cfg.Trace != nil {
		fmt.Fprintf(s.cfg.Trace, "%s%s\n\n", h.Program, v)
	}
	if !v.OK {
		r.fail(v.Violation, v, h)
	}
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
func (r *srun) start(n int) error {
	s := r.s
	names := make([]string, n)
	for i := range names {
		names[i] = program.ScheduledSession(i)
	}
	r.w = program.NewWorld(s.in.Queue, names...)
	r.w.Clock = r.rec.DB
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
		r.x = append(r.x, &sched{s: r.w.Sessions[i], c: c, idx: i})
	}
	return s.in.Reset(s.ctx)
}

func (r *srun) session(op program.Op) *sched {
	name := ""
	switch o := op.(type) {
	case program.Step:
		name = o.On()
	case program.ClaimTxn:
		name = o.S
	case program.LockTxn:
		name = o.S
	case program.Near:
		name = o.W
	}
	if s := r.w.Session(name); s != nil {
		for _, x := range r.x {
			if x.s == s {
				return x
			}
		}
	}
	return r.x[0]
}

// abandon leaves nothing behind when a run ends early (a failure): no statement in flight, no
// transaction open. Nothing more is recorded.
func (r *srun) abandon() {
	for _, x := range r.x {
		if x.fl != nil && !x.fl.Returned() {
			_ = r.s.in.Terminate(context.Background(), x.c.PID())
			x.fl.Wait()
		}
		if x.fl != nil || x.s.InTxn {
			x.c.Close()
		}
		x.fl = nil
	}
}

// settle leaves nothing open when a run's operations are over: a statement still waiting is
// ended with its backend, an open transaction rolls back. A run the scheduler drew never
// leaves either; a reduced program may.
func (r *srun) settle() {
	for _, x := range r.x {
		if x.fl != nil {
			r.fault(x, program.Terminate{S: x.s.Name})
			r.quiesce(true)
		}
	}
	for _, x := range r.x {
		if x.s.InTxn {
			r.issue(x, program.Rollback{S: x.s.Name})
			r.quiesce(true)
		}
	}
}

// pending reports whether a session has statements left to issue: a part of its current
// operation that applies, or suffix operations not drawn yet. It draws nothing: a session's
// next operation is drawn when the session is chosen to move, so the choices stay in the
// order the schedule makes them.
func (r *srun) pending(x *sched) bool {
	r.skip(x)
	return len(x.parts) > 0 || (x.left > 0 && r.c != nil)
}

// skip drops the parts of the current operation that do not apply now.
func (r *srun) skip(x *sched) {
	for len(x.parts) > 0 && !x.parts[0].Applicable(r.w) {
		x.parts = x.parts[1:]
	}
}

// step issues the next part of a session's current operation, drawing its next suffix
// operation when the current one is over.
func (r *srun) step(x *sched) {
	for r.skip(x); len(x.parts) == 0; r.skip(x) {
		x.fault = nil // its operation is over: a fault whose statement did not apply goes with it
		if x.left == 0 || r.c == nil {
			return // its last operation had nothing it could issue
		}
		x.left--
		for _, op := range r.drawnProg.next(r.c, x.idx) {
			x.parts = append(x.parts, flatten(op)...)
		}
	}
	op := x.parts[0]
	x.parts = x.parts[1:]
	r.issue(x, op)
}

// replayLine issues one line of a saved program, if it applies now.
func (r *srun) replayLine(op program.Op) {
	x := r.session(op)
	if !op.Applicable(r.w) {
		return
	}
	if _, ok := op.(program.Step); !ok {
		// A compound line (written by hand) runs its parts one after another.
		for _, p := range flatten(op) {
			if p.Applicable(r.w) {
				r.issue(x, p)
				r.quiesce(false)
			}
		}
		return
	}
	r.issue(x, op)
	r.quiesce(false)
}

// issue starts one step on its session: a fault is injected, a statement sent, a procedure
// (a pause) run. Every statement but the last is waited for (none of them waits for a row
// lock).
func (r *srun) issue(x *sched, op program.Op) {
	if f, ok := op.(program.ProxyFault); ok {
		r.proxyFault(x, f) // the program holds it where it is armed
		return
	}
	stmts := []program.Stmt(nil)
	if st, ok := op.(program.Step); ok {
		if stmts = st.Stmts(r.w); len(stmts) > 0 {
			r.armFault(x) // before the step, in the program and the trace as on the wire
		}
	}
	if !r.draining && !r.inProcedure {
		r.ran = append(r.ran, op)
	}
	if f, ok := op.(program.Fault); ok {
		r.fault(x, f)
		return
	}
	if p, ok := op.(program.Procedure); ok {
		r.procedure(x, p)
		return
	}
	if _, ok := op.(program.Step); !ok {
		r.harness(fmt.Errorf("%s: not a step a scheduler issues", op))
		return
	}
	x.line = len(r.trace)
	r.trace = append(r.trace, r.line(x, op))
	for i, stmt := range stmts {
		r.timed = r.timed || program.IsTimed(stmt)
		if r.alone(x) {
			var strict bool
			if stmt, strict = program.Strictly(stmt); strict {
				r.trace[x.line] += " (strict)"
			}
		}
		f := &record.Flight{Stmt: stmt}
		if err := x.c.Send(r.s.ctx, f); err != nil {
			r.harness(err)
			return
		}
		x.fl, x.waits = f, false
		x.s.Busy = true
		if i < len(stmts)-1 {
			f.Wait()
			if r.handle(x) != nil {
				return // the step's first statement failed: the rest is not sent
			}
		}
	}
}

// alone reports whether no session but x has a statement in flight or a transaction open: a
// statement x sends now races nothing.
func (r *srun) alone(x *sched) bool {
	for _, o := range r.x {
		if o != x && (o.fl != nil || o.s.InTxn) {
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
func (r *srun) procedure(x *sched, p program.Procedure) {
	line := len(r.trace)
	r.trace = append(r.trace, r.line(x, p))
	before := r.slept
	r.inProcedure = true
	err := p.Run(r.s.ctx, r)
	r.inProcedure = false
	if err != nil {
		r.harness(err)
	}
	if slept := r.slept - before; slept > 0 {
		r.timed = true
		r.pauses++
		if _, ok := p.(program.Near); ok {
			r.trace[line] += fmt.Sprintf(" -> slept %v", slept.Round(time.Millisecond))
		}
	}
}

// line is an operation as the trace shows it: as it prints, with the session's life when it
// has been reconnected ("s1/2 claim"). A pause prints without a session: it stops every one.
func (r *srun) line(x *sched, op program.Op) string {
	if rest, ok := strings.CutPrefix(op.String(), x.s.Name+" "); ok {
		return x.s.Label() + " " + rest
	}
	return op.String()
}

// quiesce waits until every statement in flight has either returned or waits for a lock held
// by a session that is not itself waiting, then handles the returns in session order, so that
// timestamps and the trace do not depend on which goroutine the runtime ran first. Returns
// are stamped when handled, a little later than they happened: a wider interval only allows
// more orders, so it can hide nothing the checker would otherwise accept. A cycle of waits
// (a deadlock) is left to Postgres's deadlock detector: the wait goes on until one of them
// fails. forceProgress waits until at least one statement returns.
func (r *srun) quiesce(forceProgress bool) {
	// Most statements return within a millisecond: wait that long for them before asking
	// Postgres who waits for whom.
	grace := time.Now().Add(2 * time.Millisecond)
	for _, x := range r.x {
		if x.fl == nil || x.fl.Returned() {
			continue
		}
		x.fl.ReturnedBy(grace)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		waiting := map[uint32]*sched{}
		returned := false
		for _, x := range r.x {
			if x.fl == nil {
				continue
			}
			if x.fl.Returned() {
				returned = true
				continue
			}
			waiting[x.c.PID()] = x
		}
		if len(waiting) == 0 || (r.stable(waiting) && (returned || !forceProgress)) {
			break
		}
		if time.Now().After(deadline) {
			r.harness(fmt.Errorf("statements still running after 20s: %s", r.inFlight()))
		}
		time.Sleep(100 * time.Microsecond)
		runtime.Gosched()
	}
	for _, x := range r.x {
		if x.fl == nil {
			continue
		}
		if x.fl.Returned() {
			r.handle(x)
			continue
		}
		if !x.waits {
			x.waits = true
			r.trace[x.line] += " [waits for a lock]"
		}
		if program.SkipsLocked(x.fl.Stmt) {
			r.violation(model.Violate(model.PSkipLocked, "%s's %s waits for a row lock another session holds, instead of skipping the row", x.s.Label(), x.fl.Stmt.Name()))
		}
	}
}

// stable reports whether every waiting statement waits for a lock and no cycle of waits runs
// through them.
func (r *srun) stable(waiting map[uint32]*sched) bool {
	blockers := map[uint32][]uint32{}
	for pid := range waiting {
		pids, err := r.s.in.Blocked(r.s.ctx, pid)
		if err != nil {
			r.harness(err)
		}
		if len(pids) == 0 {
			return false // still running
		}
		for _, p := range pids {
			if _, ok := waiting[uint32(p)]; ok {
				blockers[pid] = append(blockers[pid], uint32(p))
			}
		}
	}
	// A wait on a session that is not waiting lasts until that session moves; only a cycle
	// among waiting sessions resolves by itself.
	state := map[uint32]int{}
	var cyclic func(uint32) bool
	cyclic = func(p uint32) bool {
		switch state[p] {
		case 1:
			return true
		case 2:
			return false
		}
		state[p] = 1
		for _, q := range blockers[p] {
			if cyclic(q) {
				return true
			}
		}
		state[p] = 2
		return false
	}
	for pid := range waiting {
		if cyclic(pid) {
			return false
		}
	}
	return true
}

func (r *srun) inFlight() string {
	var out []string
	for _, x := range r.x {
		if x.fl != nil && !x.fl.Returned() {
			out = append(out, x.s.Label()+": "+x.fl.Stmt.String())
		}
	}
	return strings.Join(out, ", ")
}

// handle records a returned statement and returns its error.
func (r *srun) handle(x *sched) error {
	f := x.fl
	res := f.Wait()
	x.fl = nil
	x.s.Busy = false
	x.results = append(x.results, res)
	answer := f.Stmt.Answer(res)
	switch {
	case errors.Is(res.Err, sut.ErrRolledBack):
		answer = "rolled back"
	case res.Err != nil && pgerr.Code(res.Err) != "":
		answer = "error SQLSTATE " + pgerr.Code(res.Err)
	case res.Err != nil:
		answer = "connection lost"
	case answer == "":
		answer = "ok"
	}
	if x.waits {
		answer += " (after waiting)"
	}
	pid, life := x.c.PID(), x.c.Connections()
	v := x.c.RecordAnswer(f)
	// Lost: also when the client reconnected at once (a session whose claims held its
	// transaction waits for its old backend to be gone that way).
	lost := !x.c.Connected() || x.c.Connections() != life
	if lost && pid != 0 {
		// A lost connection's backend ends by itself (a proxy cut or drop closed its socket):
		// the run goes on once it has, so that no statement after it can wait for its locks.
		if err := r.s.in.WaitGone(r.s.ctx, pid); err != nil {
			r.harness(err)
		}
	}
	if r.timed && res.Clock.Known() {
		answer += "  @" + f.At.String()
	}
	line := strings.Replace(r.trace[x.line], " [waits for a lock]", "", 1)
	if strings.Contains(line, " -> ") {
		line += "; " + answer
	} else {
		line += " -> " + answer
	}
	r.trace[x.line] = line
	r.w.Apply(x.s, f.Stmt, res, f.At)
	if res.Err != nil && lost {
		r.w.Lost(x.s)
	}
	x.c.SyncHolding(x.s)
	// On a queue whose claims hold a transaction, another session's expiry ends the holder's
	// backend: that is the lease ending, not a fault.
	expired := r.w.TxBound && (lost || pgerr.Code(res.Err) == "57P01")
	if res.Err != nil && !f.Faulted && !expired && !errors.Is(res.Err, sut.ErrRolledBack) {
		// Nothing but the harness's own faults may make a statement fail here.
		if v != nil {
			r.violation(v)
		}
		r.harness(fmt.Errorf("%s: %s failed though no fault was injected: %w", x.s.Label(), f.Stmt, res.Err))
	}
	return res.Err
}

// concurrent runs the suffixes under the drawn schedule: at each step the chooser picks a
// session that can issue a statement (or, now and then, a fault to inject), and the run
// quiesces.
func (r *srun) concurrent(d *drawn) {
	r.drawnProg = d
	for {
		var ready, waiting, idleInTxn []*sched
		for _, x := range r.x {
			switch {
			case x.fl != nil:
				waiting = append(waiting, x)
			case r.pending(x):
				ready = append(ready, x)
				if x.s.InTxn {
					idleInTxn = append(idleInTxn, x)
				}
			}
		}
		if len(ready) == 0 && len(waiting) == 0 {
			return
		}
		targets := append(append([]*sched(nil), waiting...), idleInTxn...)
		if len(ready) == 0 || (len(targets) > 0 && r.c.Choose(0, 7, "fault?") == 7) {
			if len(targets) == 0 {
				r.quiesce(true)
				continue
			}
			x := targets[r.c.Choose(0, len(targets)-1, "fault target")]
			var f program.Op = program.Terminate{S: x.s.Name}
			if x.fl != nil && !chooseBool(r.c, "terminate") {
				f = program.Cancel{S: x.s.Name}
			}
			r.issue(x, f)
			r.quiesce(false)
			continue
		}
		x := ready[r.c.Choose(0, len(ready)-1, "next")]
		r.step(x)
		r.quiesce(false)
	}
}

// fault cancels a session's statement or ends its backend. A session idle in its transaction
// is cancelled the seed's way (parked in pg_sleep, then cancelled, then rolled back).
func (r *srun) fault(x *sched, f program.Fault) {
	ctx := r.s.ctx
	kind := program.FaultCancel
	if _, ok := f.(program.Terminate); ok {
		kind = program.FaultTerminate
	}
	r.trace = append(r.trace, r.line(x, f))
	r.rec.Fault(string(kind), x.c.Label())
	if x.fl != nil {
		x.fl.Faulted = true
	}
	pid := x.c.PID()
	switch {
	case kind == program.FaultCancel && x.fl != nil:
		if err := r.s.in.Cancel(ctx, pid); err != nil {
			r.harness(err)
		}
	case kind == program.FaultCancel:
		x.s.Busy = true // parked in pg_sleep until the cancel lands
		if err := x.c.CancelIdle(ctx); err != nil {
			r.harness(err)
		}
		x.s.Busy = false
		r.w.Apply(x.s, program.RollbackStmt, program.Result{}, model.Window{})
	default:
		if err := r.s.in.Terminate(ctx, pid); err != nil {
			r.harness(err)
		}
		if x.fl == nil { // idle: it is gone with the backend
			x.c.ConnectionLost()
			r.w.Lost(x.s)
		}
	}
}

// World, Do and Sleep make the scheduler a runner of procedures (the drain): each step runs
// alone, to its end.
func (r *srun) World() *program.World { return r.w }

func (r *srun) Do(ctx context.Context, st program.Step) ([]program.Result, error) {
	x := r.session(st)
	if !st.Applicable(r.w) {
		return nil, nil
	}
	x.results = nil
	r.issue(x, st)
	for x.fl != nil {
		r.quiesce(true)
	}
	return x.results, nil
}

func (r *srun) Sleep(ctx context.Context, d time.Duration) error {
	if err := program.Wait(ctx, d, nil); err != nil {
		return err
	}
	r.slept += d
	return nil
}

// listing is the interleaving with the queue's answers.
func (r *srun) listing() string {
	var b strings.Builder
	for i, l := range r.trace {
		fmt.Fprintf(&b, "%4d. %s\n", i+1, l)
	}
	return b.String()
}

// violation ends the run with a broken promise seen directly.
func (r *srun) violation(v *model.Violation) {
	h := r.rec.History(r.s.in.Queue.Source, "scheduled")
	h.Shape = r.s.in.Queue.Shape()
	h.Program = r.listing()
	h.Findings = append(h.Findings, v)
	r.fail(v, &check.Verdict{Violation: v, Problems: []string{v.Error()}}, h)
}

// harness ends the run with a failure of the suite's own machinery.
func (r *srun) harness(err error) {
	r.s.last = nil // the harness failed, not the queue
	r.t.Fatalf("harness: %s\n%s", textfmt.OneLine(record.ErrorText(err)), r.listing())
}

// fail writes the report and stops the run. Each property fails from its own line, so that
// rapid's shrinker, which keeps only candidates that fail with the same stack, shrinks toward
// the same broken promise.
func (r *srun) fail(v *model.Violation, verdict *check.Verdict, h *history.History) {
	r.t.Helper()
	f := &program.Finding{Violation: v, Queue: r.s.in.Queue.Name, Source: r.s.in.Queue.Source, Mode: program.Scheduled,
		Program: r.program(v), Trace: r.listing()}
	if v == nil {
		f.Violation = model.Violate(model.PLinearizable, "%s", verdict)
	}
	if r.c != nil {
		f.FuzzInput = append([]byte(nil), r.c.log().bytes...)
	}
	dir, err := report.FixedDir(r.s.cfg.ReportDir, "scheduled-"+r.s.cfg.Name)
	if err == nil {
		err = report.Write(dir, h, verdict)
	}
	if err == nil {
		err = f.Program.WriteFile(filepath.Join(dir, report.ProgramFile))
	}
	if err == nil && f.FuzzInput != nil {
		err = os.WriteFile(filepath.Join(dir, report.FuzzInputFile), FuzzInputFile(f.FuzzInput), 0o644)
	}
	var b strings.Builder
	b.WriteString(f.String())
	if verdict.Explanation != "" {
		b.WriteString(verdict.Explanation)
	}
	if err != nil {
		fmt.Fprintf(&b, "(no report: %s)\n", textfmt.OneLine(err.Error()))
	} else {
		f.ReportDir = dir
		fmt.Fprintf(&b, "report: %s (the program replays with: pgqcheck replay %s)\n", dir, filepath.Join(dir, report.ProgramFile))
	}
	r.s.last = f
	r.s.trace = f.Trace
	if r.c != nil {
		r.s.lastMarks = r.c.log().marks
	}
	program.FailProperty(r.t, f.Property(), b.String())
}

// program is what ran, as a scheduled program that replays it.
func (r *srun) program(v *model.Violation) *program.Program {
	h := map[string]string{program.HeaderMode: string(program.Scheduled), program.HeaderSessions: strconv.Itoa(r.sessions),
		program.HeaderQueue: r.s.in.Queue.Source}
	p := &program.Program{Header: h, Ops: append([]program.Op(nil), r.ran...)}
	if v != nil {
		p.SetVerdict(v)
	}
	return p
}

// SearchScheduled runs scheduled mode outside `go test`, with rapid's usual checks and
// shrinking. It returns nil when every check passed; an error when the harness failed rather
// than the queue. The sessions it opens are closed before it returns.
func SearchScheduled(ctx context.Context, in *sut.Installed, name string, cfg ScheduledConfig) (*program.Finding, error) {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	out, failed := rapidrun.Check(name, s.Property)
	return s.outcome(out, failed)
}

// outcome is what a run outside `go test` came to: the last failing run's finding (rapid ends
// by replaying its shrunk case), or the harness's failure.
func (s *Scheduler) outcome(out string, failed bool) (*program.Finding, error) {
	switch {
	case !failed:
		return nil, nil
	case s.last == nil:
		return nil, fmt.Errorf("harness: %s", textfmt.OneLine(out))
	}
	return s.last, nil
}

// ReplayInput runs scheduled mode once, outside `go test`, with the choices of a FuzzScheduled
// input. It returns nil when the run held.
func ReplayInput(ctx context.Context, in *sut.Installed, name string, cfg ScheduledConfig, data []byte) (*program.Finding, error) {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	return s.replayInput(name, data)
}

func (s *Scheduler) replayInput(name string, data []byte) (*program.Finding, error) {
	return s.outcome(rapidrun.Run(name, func(t rapid.TB) { s.RunBytes(t, data) }))
}

// ReplayProgram runs a saved scheduled program once, outside `go test`. It returns nil when
// the run held.
func ReplayProgram(ctx context.Context, in *sut.Installed, cfg ScheduledConfig, p *program.Program) (*program.Finding, error) {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	return s.replayProgram(p)
}

// ReplayProgram runs a saved scheduled program once, outside `go test`, on s's sessions: nil
// when the run held (Trace then shows what it did).
func (s *Scheduler) ReplayProgram(p *program.Program) (*program.Finding, error) {
	return s.replayProgram(p)
}

func (s *Scheduler) replayProgram(p *program.Program) (*program.Finding, error) {
	s.trace = ""
	return s.outcome(rapidrun.Run("replay", func(t rapid.TB) { s.RunProgram(t, p) }))
}

// ReduceScheduled removes every operation of a scheduled finding's program that its failure
// does not need (the one reducer, program.Reduce), within budget, and returns the smallest
// failing run's finding, its report folder left in place.
func ReduceScheduled(ctx context.Context, in *sut.Installed, cfg ScheduledConfig, f *program.Finding, budget time.Duration) *program.Finding {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	header := f.Program.Header
	run := func(ops []program.Op) error {
		g, err := s.replayProgram(&program.Program{Header: header, Ops: ops})
		switch {
		case err != nil:
			return &program.HarnessError{Err: err}
		case g == nil:
			return nil
		}
		return g.Violation
	}
	ops, err := program.Reduce(ctx, f.Program.Ops, budget, run)
	var v *model.Violation
	if !errors.As(err, &v) || v.Property != f.Property() {
		return f
	}
	g, _ := s.replayProgram(&program.Program{Header: header, Ops: ops})
	if g == nil || g.Property() != f.Property() {
		return f
	}
	g.FuzzInput = f.FuzzInput
	return g
}
