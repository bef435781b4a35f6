package linear

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"pgregory.net/rapid"

	"pgqcheck/model"
	ops "pgqcheck/program"
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

// Scheduler runs scheduled programs against one installed queue. Its sessions survive from
// one run to the next (a run costs a reset, not connections). It is not safe for concurrent use.
type Scheduler struct {
	ctx  context.Context
	in   *sut.Installed
	cfg  ScheduledConfig
	sess []*ssess
	// lastFailure is the choices of the last run that failed; lastReport, its report folder.
	lastFailure choiceLog
	lastReport  string
	// lastViolation is the broken promise the last run stopped with (nil: it held, or failed
	// without naming a property).
	lastViolation *model.Violation
}

// NewScheduler prepares scheduled mode for an installed queue. Close it when done.
func NewScheduler(ctx context.Context, in *sut.Installed, cfg ScheduledConfig) *Scheduler {
	cfg = cfg.withDefaults(in.Queue)
	s := &Scheduler{ctx: ctx, in: in, cfg: cfg}
	for i := 0; i < cfg.Sessions; i++ {
		s.sess = append(s.sess, &ssess{name: sessionName(i)})
	}
	return s
}

// LastFailure is the choices of the last run that failed, as a FuzzScheduled input: after a
// rapid search, the shrunk failure's (rapid ends by replaying it).
func (s *Scheduler) LastFailure() []byte { return s.lastFailure.bytes }

// LastReport is the report folder of the last run that failed ("" if it could not be written).
func (s *Scheduler) LastReport() string { return s.lastReport }

// Close ends every session, whatever it was doing.
func (s *Scheduler) Close() {
	for _, x := range s.sess {
		s.abandon(x)
	}
}

// Property is the rapid property of scheduled mode: draw a program and a schedule, run them,
// drain the queue, and check the history. It fails with the broken property.
func (s *Scheduler) Property(t *rapid.T) {
	s.run(t, &rapidChoices{t: t})
}

// RunBytes is one run of scheduled mode whose choices come from data (FuzzScheduled's input),
// one byte a choice, as Property's would come from rapid. It fails t with the broken property.
func (s *Scheduler) RunBytes(t Failer, data []byte) {
	s.run(t, &byteChoices{data: data})
}

// Failer is what a failing run reports to: a *rapid.T, or a *testing.T under the fuzzer.
type Failer = ops.Failer

func (s *Scheduler) run(t Failer, c chooser) {
	t.Helper()
	p := drawProgram(c, s.cfg, s.in.Queue.Lock != "")
	r := &srun{s: s, t: t, c: c, rec: NewRecorder(true), sess: s.sess[:len(p.lengths)], p: p}
	s.lastViolation = nil
	defer r.settle()
	if err := r.start(); err != nil {
		t.Fatalf("harness: %v", err)
	}
	for _, po := range p.prefix {
		x := r.sess[po.session]
		x.ops = []sop{po.op}
		for r.pending(x) {
			r.step(x)
			r.quiesce(false)
		}
	}
	for i, n := range p.lengths {
		r.sess[i].idx, r.sess[i].left = i, n
	}
	r.trace = append(r.trace, "-- concurrent --")
	r.concurrent()
	r.trace = append(r.trace, "-- drain --")
	r.drain()
	h := r.rec.History(s.in.Queue.Source, "scheduled")
	h.Drained = true
	h.Program = r.program()
	v := Check(h, s.cfg.CheckTimeout)
	if s.cfg.Trace != nil {
		fmt.Fprintf(s.cfg.Trace, "%s%s\n\n", h.Program, v)
	}
	if !v.OK {
		r.fail(v.Violation, v, h)
	}
}

// ssess is one scheduled session.
type ssess struct {
	name   string
	S      *sut.Session
	client int
	lives  int

	idx     int
	ops     []sop  // operations not started (the prefix's)
	left    int    // suffix operations not drawn yet
	stmts   []stmt // what is left of the current operation
	tokens  []token
	inTxn   bool
	aborted bool // the open transaction failed: it can only roll back
	claimed bool // the open transaction's claim returned a job
	pend    []Op // the open transaction's operations, returned when it commits
	locked  int64
	fl      *flight
	faulted bool // the harness cancelled or terminated the current statement or transaction
}

type stmtKind int

const (
	sEnqueue stmtKind = iota
	sClaim
	sComplete
	sExpire
	sSnapshot
	sBegin
	sLock
	sCommit
	sRollback
)

type stmt struct {
	kind      stmtKind
	back      int
	job       int64
	inTxnOnly bool // a completion that belongs to its transaction's claim
}

// flight is a statement sent and not yet handled.
type flight struct {
	st      stmt
	tok     token  // complete: the token presented
	payload string // enqueue
	job     int64  // expire: the job, resolved when issued
	strict  bool
	call    int64
	line    int // its line in the trace
	done    chan result
	res     *result // received, not yet handled
	waits   bool
	known   []int64 // snapshot: ids whose enqueue had returned when it was called
}

type result struct {
	out  model.Output
	rows []model.Row
	err  error
}

// srun is one run of a scheduled program.
type srun struct {
	s      *Scheduler
	t      Failer
	c      chooser
	rec    *Recorder
	sess   []*ssess
	trace  []string
	n      int // payload counter
	p      *program
	known  []int64 // ids whose enqueue returned
	claims []token // every claim that returned a job, in order
}

func (r *srun) ctx() context.Context { return r.s.ctx }

// start makes every session live, idle and outside a transaction, and empties the queue.
func (r *srun) start() error {
	for _, x := range r.s.sess {
		if x.S != nil && (x.S.Conn().IsClosed() || x.inTxn || x.fl != nil) {
			r.s.abandon(x)
		}
		*x = ssess{name: x.name, S: x.S, lives: 1}
	}
	for _, x := range r.sess {
		if err := r.connect(x); err != nil {
			return err
		}
	}
	return r.s.in.Reset(r.ctx())
}

func (r *srun) connect(x *ssess) error {
	if x.S == nil {
		s, err := r.s.in.Connect(r.ctx(), x.name, sut.SessionOptions{StatementTimeout: 30 * time.Second})
		if err != nil {
			return err
		}
		x.S = s
	}
	x.client = r.rec.NewClient()
	return nil
}

func (x *ssess) label() string {
	if x.lives <= 1 {
		return x.name
	}
	return fmt.Sprintf("%s/%d", x.name, x.lives)
}

// abandon ends a session from outside: a statement still in flight is stopped by ending its
// backend, and its goroutine is waited for.
func (s *Scheduler) abandon(x *ssess) {
	if x.S == nil {
		return
	}
	if x.fl != nil && x.fl.res == nil {
		_ = s.in.Terminate(context.Background(), x.S.PID)
		<-x.fl.done
	}
	x.S.Close()
	x.S, x.fl, x.inTxn = nil, nil, false
}

// settle leaves nothing behind when a run ends early (a failure): no statement in flight, no
// transaction open.
func (r *srun) settle() {
	for _, x := range r.sess {
		if x.fl != nil || x.inTxn {
			r.s.abandon(x)
		}
	}
}

// pending reports whether a session has statements left to issue.
func (r *srun) pending(x *ssess) bool {
	r.skipInapplicable(x, false)
	return len(x.stmts) > 0 || len(x.ops) > 0 || x.left > 0
}

// skipInapplicable drops statements that cannot be issued (a completion with no token) and,
// when draw is set and the current operation is over, starts the next one.
func (r *srun) skipInapplicable(x *ssess, draw bool) {
	for {
		if len(x.stmts) == 0 {
			switch {
			case !draw:
				return
			case len(x.ops) > 0:
				x.stmts, x.ops = x.ops[0].statements(), x.ops[1:]
			case x.left > 0:
				x.left--
				x.stmts = r.p.next(r.c, x.idx).statements()
			default:
				return
			}
		}
		st := x.stmts[0]
		if st.kind == sComplete && (st.back >= len(x.tokens) || (st.inTxnOnly && (x.aborted || !x.claimed))) {
			x.stmts = x.stmts[1:]
			continue
		}
		return
	}
}

// step issues a session's next statement.
func (r *srun) step(x *ssess) {
	r.skipInapplicable(x, true)
	if len(x.stmts) == 0 {
		return // its last operation had nothing it could issue
	}
	st := x.stmts[0]
	x.stmts = x.stmts[1:]
	if x.aborted && st.kind != sCommit && st.kind != sRollback {
		return // the transaction failed; only its end is still sent
	}
	x.faulted = false
	f := &flight{st: st, done: make(chan result, 1)}
	if st.kind == sComplete {
		f.tok = x.tokens[len(x.tokens)-1-st.back]
	}
	if st.kind == sClaim {
		f.strict = true
		for _, o := range r.sess {
			if o != x && (o.fl != nil || o.inTxn) {
				f.strict = false
			}
		}
	}
	if st.kind == sSnapshot {
		f.known = append([]int64(nil), r.known...)
	}
	if st.kind == sExpire {
		f.job = st.job
		if f.job == 0 && st.back < len(r.claims) {
			f.job = r.claims[len(r.claims)-1-st.back].id
		}
		if f.job == 0 {
			f.job = 1
		}
	}
	if st.kind == sEnqueue {
		r.n++
		f.payload = fmt.Sprintf(`{"n":%d}`, r.n)
	}
	f.call = r.rec.Now()
	f.line = len(r.trace)
	r.trace = append(r.trace, fmt.Sprintf("%s: %s", x.label(), r.describe(f)))
	x.fl = f
	go func(s *sut.Session) { f.done <- r.exec(s, f) }(x.S)
}

func (r *srun) describe(f *flight) string {
	switch f.st.kind {
	case sEnqueue:
		return "enqueue"
	case sClaim:
		if f.strict {
			return "claim (strict)"
		}
		return "claim"
	case sComplete:
		return fmt.Sprintf("complete job %d gen %d", f.tok.id, f.tok.gen)
	case sExpire:
		return fmt.Sprintf("expire job %d", f.job)
	case sSnapshot:
		return "snapshot"
	case sBegin:
		return "BEGIN"
	case sLock:
		return fmt.Sprintf("lock job %d", f.st.job)
	case sCommit:
		return "COMMIT"
	case sRollback:
		return "ROLLBACK"
	}
	return "?"
}

// exec runs one statement on its own goroutine; nothing here may touch the run's state.
func (r *srun) exec(s *sut.Session, f *flight) result {
	ctx := r.ctx()
	switch f.st.kind {
	case sEnqueue:
		id, err := s.Enqueue(ctx, f.payload)
		return result{out: model.Output{Job: id}, err: err}
	case sClaim:
		id, gen, ok, err := s.Claim(ctx, time.Hour)
		return result{out: model.Output{Found: ok, Job: id, Gen: gen}, err: err}
	case sComplete:
		rows, err := s.Complete(ctx, f.tok.id, f.tok.gen)
		return result{out: model.Output{Rows: rows}, err: err}
	case sExpire:
		return result{err: s.Expire(ctx, f.job)}
	case sSnapshot:
		rows, err := s.Snapshot(ctx)
		return result{rows: rows, err: err}
	case sBegin:
		return result{err: s.Begin(ctx)}
	case sLock:
		return result{err: s.Lock(ctx, f.st.job)}
	case sCommit:
		tag, err := s.Conn().Exec(ctx, "COMMIT")
		if err == nil && tag.String() == "ROLLBACK" {
			err = errTxnRolledBack
		}
		return result{err: err}
	case sRollback:
		return result{err: s.Rollback(ctx)}
	}
	return result{err: fmt.Errorf("unknown statement")}
}

var errTxnRolledBack = errors.New("COMMIT rolled the failed transaction back")

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
	for _, x := range r.sess {
		if x.fl == nil || x.fl.res != nil {
			continue
		}
		wait := time.NewTimer(time.Until(grace))
		select {
		case res := <-x.fl.done:
			x.fl.res = &res
		case <-wait.C:
		}
		wait.Stop()
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		waiting := map[uint32]*ssess{}
		returned := false
		for _, x := range r.sess {
			if x.fl == nil || x.fl.res != nil {
				returned = returned || (x.fl != nil && x.fl.res != nil)
				continue
			}
			select {
			case res := <-x.fl.done:
				x.fl.res = &res
				returned = true
			default:
				waiting[x.S.PID] = x
			}
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
	for _, x := range r.sess {
		if x.fl == nil {
			continue
		}
		if x.fl.res != nil {
			r.handle(x)
			continue
		}
		if !x.fl.waits {
			x.fl.waits = true
			r.trace[x.fl.line] += " [waits for a lock]"
		}
		if x.fl.st.kind == sClaim {
			r.violation(model.Violate(model.PSkipLocked, "%s's claim waits for a row lock another session holds, instead of skipping the row", x.label()))
		}
	}
}

// stable reports whether every waiting statement waits for a lock and no cycle of waits runs
// through them.
func (r *srun) stable(waiting map[uint32]*ssess) bool {
	blockers := map[uint32][]uint32{}
	for pid := range waiting {
		pids, err := r.s.in.Blocked(r.ctx(), pid)
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
	for _, x := range r.sess {
		if x.fl != nil && x.fl.res == nil {
			out = append(out, x.label()+": "+r.describe(x.fl))
		}
	}
	return strings.Join(out, ", ")
}

// handle records a returned statement.
func (r *srun) handle(x *ssess) {
	f, res := x.fl, *x.fl.res
	x.fl = nil
	ret := r.rec.Now()
	answer := r.answer(f, res)
	if f.waits {
		answer += " (after waiting)"
	}
	r.trace[f.line] = strings.Replace(r.trace[f.line], " [waits for a lock]", "", 1) + " -> " + answer
	dead := res.err != nil && x.S.Conn().IsClosed()
	if res.err != nil && !x.faulted && !errors.Is(res.err, errTxnRolledBack) {
		// Nothing but the harness's own faults may make a statement fail here.
		if v := unexpected(kindOf(f.st.kind), res.err); v != nil {
			r.violation(v)
		}
		r.harness(fmt.Errorf("%s: %s failed though no fault was injected: %w", x.label(), r.describe(f), res.err))
	}
	op := Op{Client: x.client, Session: x.label(), Call: f.call, Return: ret}
	switch f.st.kind {
	case sEnqueue, sClaim, sComplete, sExpire:
		op.Input = r.input(f)
		op.Output = res.out
		switch {
		case res.err != nil && x.inTxn:
			// A failed statement aborts its transaction, which can then only roll back.
			op.Output = model.Output{Outcome: model.Aborted, Err: errText(res.err)}
			r.rec.Add(op)
			x.aborted = true
		case res.err != nil:
			op.Output = model.Output{Outcome: outcomeOf(res.err), Err: errText(res.err)}
			if op.Output.Outcome == model.Unknown {
				op.Return = Never
			}
			r.rec.Add(op)
			if op.Return == Never {
				x.client = r.rec.NewClient()
			}
		case x.inTxn && !(f.st.kind == sClaim && !res.out.Found):
			x.pend = append(x.pend, op) // takes effect when the transaction commits
		default:
			r.rec.Add(op) // autocommit, or an empty claim, which changes nothing either way
		}
		if res.err == nil {
			switch {
			case f.st.kind == sEnqueue && !x.inTxn:
				r.known = append(r.known, res.out.Job)
			case f.st.kind == sClaim && res.out.Found:
				x.tokens = append(x.tokens, token{res.out.Job, res.out.Gen})
				r.claims = append(r.claims, token{res.out.Job, res.out.Gen})
				x.claimed = x.inTxn
			}
		}
	case sSnapshot:
		if res.err == nil {
			for _, o := range observations(res.rows, f.known) {
				r.rec.Add(Op{Client: x.client, Session: x.label(), Input: o.in, Output: o.out, Call: f.call, Return: ret})
			}
		}
	case sBegin:
		if res.err == nil {
			x.inTxn = true
		}
	case sLock:
		if res.err == nil {
			x.locked = f.st.job
			r.rec.Add(Op{Client: x.client, Session: x.label(), Input: model.Input{Kind: model.OpLock, Job: f.st.job}, Call: f.call, Return: ret})
		} else {
			x.aborted = true
		}
	case sCommit, sRollback:
		commitUnknown := f.st.kind == sCommit && res.err != nil && !errors.Is(res.err, errTxnRolledBack) && outcomeOf(res.err) == model.Unknown && !x.aborted
		r.endTxn(x, f.call, ret, f.st.kind == sCommit && res.err == nil && !x.aborted, commitUnknown)
	}
	if dead {
		r.lost(x, ret)
	}
}

// endTxn resolves the open transaction's operations: committed, they return with the COMMIT;
// rolled back, they had no effect; when the COMMIT's answer was lost, their outcome is unknown.
func (r *srun) endTxn(x *ssess, call, ret int64, committed, unknown bool) {
	for _, op := range x.pend {
		switch {
		case committed:
			op.Return = ret
		case unknown:
			op.Output.Outcome = model.Unknown
			op.Return = Never
		default:
			op.Output.Outcome = model.Aborted
			op.Return = ret
		}
		r.rec.Add(op)
	}
	if x.locked != 0 {
		out, at := model.Output{}, ret
		if unknown {
			out, at = model.Output{Outcome: model.Unknown}, Never
		}
		r.rec.Add(Op{Client: x.client, Session: x.label(), Input: model.Input{Kind: model.OpUnlock, Job: x.locked}, Output: out, Call: call, Return: at})
	}
	if unknown {
		x.client = r.rec.NewClient()
	}
	x.pend, x.locked, x.inTxn, x.aborted, x.claimed = nil, 0, false, false, false
}

// lost handles a session whose connection is gone: an open transaction never committed (its
// COMMIT was never sent), the rest of the current operation is dropped, and the session comes
// back as a new client.
func (r *srun) lost(x *ssess, at int64) {
	if x.inTxn {
		r.endTxn(x, at, r.rec.Now(), false, false)
	}
	x.stmts = nil
	x.S.Close()
	x.S = nil
	x.lives++ // labels count lives within the run, so the same draw prints the same text
	if err := r.connect(x); err != nil {
		r.harness(err)
	}
}

func (r *srun) input(f *flight) model.Input {
	switch f.st.kind {
	case sEnqueue:
		return model.Input{Kind: model.OpEnqueue, Payload: f.payload}
	case sClaim:
		return model.Input{Kind: model.OpClaim, Strict: f.strict}
	case sComplete:
		return model.Input{Kind: model.OpComplete, Job: f.tok.id, Gen: f.tok.gen}
	case sExpire:
		return model.Input{Kind: model.OpExpire, Job: f.job}
	}
	return model.Input{}
}

func kindOf(k stmtKind) model.OpKind {
	switch k {
	case sEnqueue:
		return model.OpEnqueue
	case sClaim:
		return model.OpClaim
	case sComplete:
		return model.OpComplete
	case sExpire:
		return model.OpExpire
	case sSnapshot:
		return model.OpObserve
	case sLock:
		return model.OpLock
	}
	return "statement"
}

func (r *srun) answer(f *flight, res result) string {
	if res.err != nil {
		if errors.Is(res.err, errTxnRolledBack) {
			return "rolled back"
		}
		if c := sqlState(res.err); c != "" {
			return "error SQLSTATE " + c
		}
		return "connection lost"
	}
	switch f.st.kind {
	case sEnqueue:
		return fmt.Sprintf("job %d", res.out.Job)
	case sClaim:
		if res.out.Found {
			return fmt.Sprintf("job %d gen %d", res.out.Job, res.out.Gen)
		}
		return "none"
	case sComplete:
		return fmt.Sprintf("%d rows", res.out.Rows)
	case sSnapshot:
		rows := make([]string, len(res.rows))
		for i, row := range res.rows {
			rows[i] = row.String()
		}
		return "[" + strings.Join(rows, " ") + "]"
	}
	return "ok"
}

// concurrent runs the suffixes under the drawn schedule: at each step rapid picks a session
// that can issue a statement (or, now and then, a fault to inject), and the run quiesces.
func (r *srun) concurrent() {
	for {
		var ready, waiting, idleInTxn []*ssess
		for _, x := range r.sess {
			switch {
			case x.fl != nil:
				waiting = append(waiting, x)
			case r.pending(x):
				ready = append(ready, x)
				if x.inTxn {
					idleInTxn = append(idleInTxn, x)
				}
			}
		}
		if len(ready) == 0 && len(waiting) == 0 {
			return
		}
		targets := append(append([]*ssess(nil), waiting...), idleInTxn...)
		if len(ready) == 0 || (len(targets) > 0 && r.c.choose(0, 7, "fault?") == 7) {
			if len(targets) == 0 {
				r.quiesce(true)
				continue
			}
			x := targets[r.c.choose(0, len(targets)-1, "fault target")]
			r.fault(x, x.fl != nil && !chooseBool(r.c, "terminate"))
			r.quiesce(false)
			continue
		}
		x := ready[r.c.choose(0, len(ready)-1, "next")]
		r.step(x)
		r.quiesce(false)
	}
}

// fault cancels a waiting statement, or terminates a session's backend (waiting, or idle in
// its transaction).
func (r *srun) fault(x *ssess, cancel bool) {
	ctx := r.ctx()
	x.faulted = true
	if cancel {
		r.trace = append(r.trace, fmt.Sprintf("%s: cancelled (pg_cancel_backend)", x.label()))
		r.rec.Fault("cancel", x.label())
		if err := r.s.in.Cancel(ctx, x.S.PID); err != nil {
			r.harness(err)
		}
		return
	}
	r.trace = append(r.trace, fmt.Sprintf("%s: terminated (pg_terminate_backend)", x.label()))
	r.rec.Fault("terminate", x.label())
	if err := r.s.in.Terminate(ctx, x.S.PID); err != nil {
		r.harness(err)
	}
	if x.fl == nil { // idle in a transaction: it is gone with the backend
		r.lost(x, r.rec.Now())
	}
}

// drain expires every lease and claims and completes until the queue answers none, alone, then
// takes the final snapshot. Its empty claim is strict: no other session holds anything.
func (r *srun) drain() {
	x := r.sess[0]
	run := func(st stmt) *result {
		x.stmts, x.ops, x.left = []stmt{st}, nil, 0
		r.step(x)
		fl := x.fl
		if fl == nil {
			return &result{err: errors.New("nothing to issue")}
		}
		r.quiesce(false)
		return fl.res
	}
	res := run(stmt{kind: sSnapshot})
	if res.err != nil {
		r.harness(res.err)
	}
	for _, row := range res.rows {
		if row.State == model.Running {
			run(stmt{kind: sExpire, job: row.ID})
		}
	}
	for i := 0; i <= len(res.rows)+len(r.known)+4; i++ {
		x.tokens = nil
		c := run(stmt{kind: sClaim})
		if c.err != nil || !c.out.Found {
			break
		}
		run(stmt{kind: sComplete})
	}
	run(stmt{kind: sSnapshot})
}

// program is the drawn program and the interleaving so far, with the queue's answers.
func (r *srun) program() string {
	return r.p.String() + "interleaving (the queue's answers):\n" + r.listing()
}

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
	h.Program = r.program()
	h.Findings = append(h.Findings, v)
	r.fail(v, &Verdict{Violation: v, Problems: []string{v.Error()}}, h)
}

// harness ends the run with a failure of the suite's own machinery.
func (r *srun) harness(err error) {
	r.t.Fatalf("harness: %s\n%s", oneLine(err), r.program())
}

func oneLine(err error) string { return strings.Join(strings.Fields(errText(err)), " ") }

// fail writes the report and stops the run. Each property fails from its own line, so that
// rapid's shrinker, which keeps only candidates that fail with the same stack, shrinks toward
// the same broken promise.
func (r *srun) fail(v *model.Violation, verdict *Verdict, h *History) {
	r.t.Helper()
	var b strings.Builder
	if v != nil {
		b.WriteString(v.Error())
	} else {
		b.WriteString(verdict.String())
	}
	fmt.Fprintf(&b, "\nqueue: %s\n%s\n", r.s.in.Queue.Source, h.Program)
	if verdict.Explanation != "" {
		b.WriteString(verdict.Explanation)
	}
	dir, err := FixedReportDir(r.s.cfg.ReportDir, "scheduled-"+r.s.cfg.Name)
	if err == nil {
		err = WriteReport(dir, h, verdict)
	}
	r.s.lastFailure = *r.c.log()
	r.s.lastViolation = v
	input := filepath.Join(dir, ReportFuzzInput)
	if err == nil {
		err = os.WriteFile(input, FuzzInputFile(r.s.lastFailure.bytes), 0o644)
	}
	r.s.lastReport = ""
	if err != nil {
		fmt.Fprintf(&b, "(no report: %s)\n", oneLine(err))
	} else {
		r.s.lastReport = dir
		fmt.Fprintf(&b, "report: %s\nfuzz input: %s (copy it into fuzz/testdata/fuzz/FuzzScheduled/ to replay it with go test ./fuzz)\n", dir, input)
	}
	msg := b.String()
	p := -1
	if v != nil {
		p = v.Property
	}
	ops.FailProperty(r.t, p, msg)
}

// Finding is what a search outside `go test` found: rapid's report of the shrunk failure.
type Finding struct {
	Name   string
	Output string
	// Violation is the broken promise the failing run stopped with; nil when it failed
	// without naming a property (a harness failure, a malformed history).
	Violation *model.Violation
	// Input is the failing run's choices as a FuzzScheduled input (see FuzzInputFile).
	Input []byte
	marks []mark
}

// Verdict returns the first line naming a property ("property N (name): ..."), else the first
// line of the failure.
func (f *Finding) Verdict() string {
	for _, l := range strings.Split(f.Output, "\n") {
		if i := strings.Index(l, "property "); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	for _, l := range strings.Split(f.Output, "\n") {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "[rapid]") {
			return s
		}
	}
	return "failed"
}

// SearchScheduled runs scheduled mode outside `go test`, with rapid's usual checks, shrinking
// and fail files (named after name, as a test's would be). It returns nil when every check
// passed. The sessions it opens are closed before it returns.
func SearchScheduled(ctx context.Context, in *sut.Installed, name string, cfg ScheduledConfig) *Finding {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	out, failed := ops.CheckOutside(name, s.Property)
	if !failed {
		return nil
	}
	// rapid ends by replaying its shrunk case, so the last failing run is that case.
	return &Finding{Name: name, Output: out, Input: s.lastFailure.bytes, marks: s.lastFailure.marks, Violation: s.lastViolation}
}

// ReplayInput runs scheduled mode once, outside `go test`, with the choices of a FuzzScheduled
// input. It returns nil when the run held.
func ReplayInput(ctx context.Context, in *sut.Installed, name string, cfg ScheduledConfig, data []byte) *Finding {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	return s.replay(name, data)
}

// replay runs one input on s outside `go test`; nil when the run held.
func (s *Scheduler) replay(name string, data []byte) *Finding {
	out, failed := ops.RunOutside(name, func(t rapid.TB) { s.RunBytes(t, data) })
	if !failed {
		return nil
	}
	return &Finding{Name: name, Output: out, Input: s.lastFailure.bytes, marks: s.lastFailure.marks, Violation: s.lastViolation}
}
