package linear

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"pgqcheck/faultproxy"
	"pgqcheck/internal/pgerr"
	"pgqcheck/linear/history"
	"pgqcheck/model"
	"pgqcheck/program"
	"pgqcheck/sut"
)

// Client is one session's view of the queue, and the only recorder of what sessions ask and
// are answered: stress traffic, scheduled interleavings and drains all send their statements
// (program.Stmt) through it. It knows the session's transaction, so that a statement inside
// one takes effect when its COMMIT returns, none when it rolls back, and maybe when the
// COMMIT's answer was lost. When its connection is lost it reconnects on the next statement,
// as a new porcupine client: an operation with an unknown outcome never returns, so the same
// client could not issue another without overlapping it (etcd's robustness tests start a new
// stream id the same way).
type Client struct {
	Name string

	in   *sut.Installed
	rec  *history.Recorder // nil: run the statements without recording (the throughput baseline)
	opts sut.SessionOptions

	mu sync.Mutex // guards s against the chaos goroutine reading it
	s  *sut.Session
	id int

	lives atomic.Int32 // sessions so far; the chaos goroutine reads it to name its targets
	pid   atomic.Uint32

	db *sut.DBClock // the database time of an unrecorded run

	// proxy, when set, carries every connection of the client, and link is the current one,
	// on which faults are armed (netfault.go).
	proxy *faultproxy.Proxy
	link  atomic.Pointer[faultproxy.Link]

	// The open transaction, as recorded: its operations return when it commits.
	inTxn, aborted bool
	pend           []history.Op
	locked         []int64

	// held are the jobs whose claim holds this session's transaction open, on a queue whose
	// claims do (TxBound), each with its claim's generation; xid is that transaction's id, alive
	// the latest time it was known open (txbound.go).
	held  map[int64]int64
	xid   string
	alive int64
}

// Dial connects a client named name.
func Dial(ctx context.Context, in *sut.Installed, name string, rec *history.Recorder, opts sut.SessionOptions) (*Client, error) {
	c := &Client{Name: name, in: in, rec: rec, opts: opts}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Client) connect(ctx context.Context) error {
	opts, opened := c.sessionOptions()
	s, err := c.in.Connect(ctx, c.Name, opts)
	if err != nil {
		return err
	}
	opened()
	c.mu.Lock()
	c.s = s
	c.lives.Add(1)
	if c.rec != nil {
		c.id = c.rec.NewClient()
	}
	c.mu.Unlock()
	c.pid.Store(s.PID)
	return nil
}

// Record starts recording into rec (a new run's history), as a fresh porcupine client with
// nothing open. The connection is kept.
func (c *Client) Record(rec *history.Recorder) {
	c.rec = rec
	c.id = rec.NewClient()
	c.lives.Store(1)
	c.inTxn, c.aborted, c.pend, c.locked = false, false, nil, nil
	c.held, c.xid, c.alive = nil, "", 0
}

// Life counts the client's connections so far.
func (c *Client) Life() int32 { return c.lives.Load() }

// PID is the backend pid of the current session (0 while disconnected).
func (c *Client) PID() uint32 { return c.pid.Load() }

// Session is the current session.
func (c *Client) Session() *sut.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

// Connected reports whether the client holds a live connection.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s != nil && !c.s.Conn().IsClosed()
}

// Close ends the session.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s != nil {
		c.s.Close()
		c.s = nil
		c.pid.Store(0)
	}
}

// label is the session's name in the history: its lifetime counts after the first.
func (c *Client) label() string {
	if n := c.lives.Load(); n > 1 {
		return fmt.Sprintf("%s/%d", c.Name, n)
	}
	return c.Name
}

// fresh makes a session that starts a run idle and alive. On a queue whose claims hold the
// session's transaction, another session's expiry may have ended this one's backend, which the
// connection learns only when used, and a claim of an earlier run may hold it open.
func (c *Client) fresh(ctx context.Context) error {
	if !c.in.Queue.Shape().TxBound {
		return c.ensure(ctx)
	}
	if s := c.Session(); s != nil && s.Conn().Ping(ctx) != nil {
		c.Lost()
	}
	if err := c.ensure(ctx); err != nil {
		return err
	}
	if s := c.Session(); s.Conn().PgConn().TxStatus() != 'I' {
		return s.Rollback(ctx)
	}
	return nil
}

// ensure reconnects a session whose connection was lost (with it went whatever its
// transaction held).
func (c *Client) ensure(ctx context.Context) error {
	if c.Connected() {
		return nil
	}
	if c.Holds() {
		return c.lose(ctx)
	}
	c.Close()
	return c.connect(ctx)
}

func (c *Client) now() int64 {
	if c.rec == nil {
		return 0
	}
	return c.rec.Now()
}

// Flight is a statement sent and not yet recorded.
type Flight struct {
	Stmt program.Stmt
	// Faulted: the harness cancelled or terminated this statement, armed a proxy fault for it,
	// or sent it into a failed transaction, so its failure is expected.
	Faulted bool

	// At is the database time the statement ran in, once it landed.
	At model.Window

	ctx   context.Context // the statement's, for what the client asks the session after it
	call  int64
	floor time.Duration // the latest database time read before it was sent
	done  chan program.Result
	res   *program.Result
}

// Send sends a statement on its own goroutine and returns at once.
func (c *Client) Send(ctx context.Context, f *Flight) error {
	if err := c.ensure(ctx); err != nil {
		return err
	}
	s := c.Session()
	f.done = make(chan program.Result, 1)
	f.ctx = ctx
	f.call = c.now()
	f.floor = c.clock().Latest()
	// A statement sent into a failed transaction can only fail: the failure that broke it was
	// the one to judge (or the harness's own, a cancel that hit a clock reading).
	f.Faulted = f.Faulted || c.armed() || s.Conn().PgConn().TxStatus() == 'E'
	go func() { f.done <- f.Stmt.Exec(ctx, s) }()
	return nil
}

// Returned reports, without waiting, whether the statement's answer has come back.
func (f *Flight) Returned() bool {
	if f.res != nil {
		return true
	}
	select {
	case r := <-f.done:
		f.res = &r
		return true
	default:
		return false
	}
}

// Wait waits for the statement's answer.
func (f *Flight) Wait() program.Result {
	if f.res == nil {
		r := <-f.done
		f.res = &r
	}
	return *f.res
}

// Do sends a statement, waits for it and records it.
func (c *Client) Do(ctx context.Context, f *Flight) (program.Result, *model.Violation, error) {
	if err := c.Send(ctx, f); err != nil {
		return program.Result{Out: model.Output{Outcome: model.NotSent}, Err: err}, nil, err
	}
	r := f.Wait()
	return r, c.Land(f), nil
}

// Land records a statement whose answer came back (Wait or Returned first). It returns the
// violation an unexpected error is (property 9, or a claim of two rows), which is also kept
// in the history's findings; errors the harness caused are not violations.
func (c *Client) Land(f *Flight) *model.Violation {
	r := f.Wait()
	ret := c.now()
	st := f.Stmt
	f.At = c.clock().Window(r.Clock, f.floor)
	var v *model.Violation
	if r.Err != nil && !errors.Is(r.Err, sut.ErrRolledBack) && !f.Faulted {
		if v = unexpected(st.Name(), r.Err); v != nil && c.rec != nil {
			c.rec.Finding(v)
		}
	}
	// Also a statement whose answer came back and whose closing clock reading found the
	// connection gone.
	dead := !c.Connected()
	st.Record(&landing{c: c, f: f, ret: ret}, r)
	if dead {
		_ = c.lose(f.ctx) // a failed reconnection is the next statement's to report
	} else if len(c.held) > 0 {
		c.checkHeld(f.ctx)
	}
	return v
}

// landing is where a landed statement records itself (program.Recording): in the history, as
// of the client's transaction, at the times the flight was called and returned.
type landing struct {
	c   *Client
	f   *Flight
	ret int64
}

func (l *landing) op(in model.Input, out model.Output) history.Op {
	in.At = l.f.At
	return history.Op{Client: l.c.id, Session: l.c.label(), Input: in, Output: out, Call: l.f.call, Return: l.ret}
}

func (l *landing) Write(in model.Input, out model.Output) {
	if l.c.inTxn {
		l.c.pend = append(l.c.pend, l.op(in, out)) // takes effect when the transaction commits
		return
	}
	l.c.add(l.op(in, out))
}

func (l *landing) Read(in model.Input, out model.Output) { l.c.add(l.op(in, out)) }

func (l *landing) Failed(in model.Input, err error) {
	c := l.c
	if c.inTxn {
		// A failed statement aborts its transaction, which can then only roll back: it returns
		// with the transaction's other operations when that ends (its ROLLBACK, or the
		// connection's loss), as one of them.
		c.pend = append(c.pend, l.op(in, model.Output{Outcome: model.Aborted, Err: errText(err)}))
		c.aborted = true
		return
	}
	op := l.op(in, model.Output{Outcome: outcomeOf(err), Err: errText(err)})
	if op.Output.Outcome == model.Unknown {
		op.Return = history.Never
	}
	c.add(op)
	if op.Return == history.Never {
		c.retire()
	}
}

func (l *landing) Aborted() {
	if l.c.inTxn {
		l.c.aborted = true
	}
}

func (l *landing) Begin() { l.c.inTxn = true }

func (l *landing) End(commit bool, err error) {
	c := l.c
	unknown := commit && err != nil && !errors.Is(err, sut.ErrRolledBack) && outcomeOf(err) == model.Unknown && !c.aborted
	c.endTxn(l.f.call, l.ret, commit && err == nil && !c.aborted, unknown)
}

func (l *landing) Locked(job int64) {
	l.c.locked = append(l.c.locked, job)
	l.c.add(history.Op{Client: l.c.id, Session: l.c.label(), Input: model.Input{Kind: model.OpLock, Job: job}, Call: l.f.call, Return: l.ret})
}

func (l *landing) Claimed(job, gen int64) {
	c := l.c
	if !c.in.Queue.Shape().TxBound {
		return
	}
	if c.held == nil {
		c.held = map[int64]int64{}
	}
	c.held[job] = gen
	// Its transaction was open while the claim ran; the check after the statement learns its id.
	c.alive, c.xid = max(c.alive, l.f.call), ""
}

func (l *landing) Completed(job int64) {
	if l.c.in.Queue.Shape().TxBound {
		delete(l.c.held, job)
	}
}

// clock is the database time the client's windows are counted in: its recorder's.
func (c *Client) clock() *sut.DBClock {
	if c.rec != nil {
		return c.rec.DB
	}
	if c.db == nil {
		c.db = &sut.DBClock{}
	}
	return c.db
}

func (c *Client) add(op history.Op) {
	if c.rec != nil {
		c.rec.Add(op)
	}
}

// retire starts a new porcupine client after an unknown outcome.
func (c *Client) retire() {
	if c.rec != nil {
		c.id = c.rec.NewClient()
	}
}

// endTxn resolves the open transaction's operations: committed, they return with the COMMIT;
// rolled back, they had no effect; when the COMMIT's answer was lost, their outcome is unknown.
func (c *Client) endTxn(call, ret int64, committed, unknown bool) {
	for _, op := range c.pend {
		switch {
		case committed:
			op.Return = ret
		case unknown:
			op.Output.Outcome = model.Unknown
			op.Return = history.Never
		default:
			op.Output.Outcome = model.Aborted
			op.Return = ret
		}
		c.add(op)
	}
	for _, id := range c.locked {
		out, at := model.Output{}, ret
		if unknown {
			out, at = model.Output{Outcome: model.Unknown}, history.Never
		}
		c.add(history.Op{Client: c.id, Session: c.label(), Input: model.Input{Kind: model.OpUnlock, Job: id}, Output: out, Call: call, Return: at})
	}
	if unknown {
		c.retire()
	}
	c.pend, c.locked, c.inTxn, c.aborted = nil, nil, false, false
}

// Lost handles a session whose connection is gone: an open transaction never committed (its
// COMMIT was never sent). The client reconnects, as a new life, on its next statement; one
// whose transaction held claims reconnects at once (see lose).
func (c *Client) Lost() { _ = c.lose(context.Background()) }

// End closes the session as the run's end does, recording what that ends.
func (c *Client) End(ctx context.Context) {
	if c.Holds() {
		_ = c.lose(ctx) // it closes the connection, then waits for the backend to be gone
	}
	c.Close()
}

// CancelIdle cancels the session's idle transaction the seed's way (program.CancelIdle) and
// records it: its operations had no effect, its locks are gone. When that cannot be done, the
// backend is ended, so that the transaction is over for sure, and the error returned.
func (c *Client) CancelIdle(ctx context.Context) error {
	call := c.now()
	if err := c.in.CancelIdle(ctx, c.Session()); err != nil {
		_ = c.in.Terminate(ctx, c.PID())
		c.Lost()
		return err
	}
	c.endTxn(call, c.now(), false, false)
	return nil
}

// outcomeOf decides what a failed statement did. Only a request that provably never reached
// the server is "not sent"; anything else may have taken effect, whatever the error says.
func outcomeOf(err error) model.Outcome {
	if pgconn.SafeToRetry(err) {
		return model.NotSent
	}
	return model.Unknown
}

// errText is an error as a history keeps it: the server's message and code, or the
// client's one-line error.
func errText(err error) string {
	var se *sut.StatementError
	if errors.As(err, &se) {
		return se.Error()
	}
	return err.Error()
}

// injected reports whether an error is one the harness causes on purpose: a cancelled
// statement, a terminated backend, a lost connection.
func injected(err error) bool {
	code := pgerr.Code(err)
	switch {
	case code == "":
		return true // not a server error: the connection went away
	case code == "57014", code == "57P01", code == "57P02", code == "57P03":
		return true
	case len(code) == 5 && code[:2] == "08":
		return true
	}
	return false
}

// unexpected turns an error the harness did not cause into the property it breaks: a queue
// statement on a correct queue never fails (property 9), and a claim never returns two rows.
func unexpected(kind string, err error) *model.Violation {
	var multi *sut.ErrMultipleRows
	if errors.As(err, &multi) {
		return multi.Violation()
	}
	if injected(err) {
		return nil
	}
	var se *sut.StatementError
	if errors.As(err, &se) {
		return model.Violate(model.PNoErrors, "%s failed with SQLSTATE %s: %s", se.File, se.SQLState, se.Msg)
	}
	return model.Violate(model.PNoErrors, "%s failed: %s", kind, errText(err))
}
