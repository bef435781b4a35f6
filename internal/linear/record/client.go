// Package record is the only recorder of what a concurrent run's sessions ask and are
// answered, as etcd's robustness tests keep their client apart: stress traffic, scheduled
// interleavings and drains all send their statements (program.Stmt) through a Client, which
// writes each into the run's history (history.Recorder) once its answer is back, as of the
// session's transaction. It also tracks the leases a transaction-bound queue's claims hold
// (txbound.go) and arms the fault proxy on its connection (proxy.go).
package record

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pgqcheck/pgqcheck/internal/dbtime"
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Client is one session's view of the queue. It knows the session's transaction, so that a
// statement inside one takes effect when its COMMIT returns, none when it rolls back, and
// maybe when the COMMIT's answer was lost. When its connection is lost it reconnects on the
// next statement, as a new porcupine client: an operation with an unknown outcome never
// returns, so the same client could not issue another without overlapping it (etcd's
// robustness tests start a new stream id the same way).
type Client struct {
	Name string

	in   *sut.Installed
	rec  *history.Recorder // nil: run the statements without recording (the throughput baseline)
	opts sut.SessionOptions

	mu   sync.Mutex // guards sess against the chaos goroutine reading it
	sess *sut.Session
	// ended: the harness ended sess's backend (Terminate), which its connection learns only
	// when next used.
	ended bool
	id    int

	connections atomic.Int32 // connections so far; the chaos goroutine reads it to name its targets
	pid         atomic.Uint32

	db *dbtime.Clock // the database time of an unrecorded run

	// proxy, when set, carries every connection of the client, and link is the current one,
	// on which faults are armed (proxy.go).
	proxy *faultproxy.Proxy
	link  atomic.Pointer[faultproxy.Link]

	// The open transaction, as recorded: its operations return when it commits.
	inTxn, aborted bool
	pending        []history.Op
	locked         []int64

	// held are the jobs whose claim holds this session's transaction open, on a queue whose
	// claims do (TxBound), each with its claim's generation; xid is that transaction's id,
	// lastOpen the latest time it was known open (txbound.go).
	held     map[int64]int64
	xid      string
	lastOpen int64
}

// Dial connects a client named name, straight to Postgres.
func Dial(ctx context.Context, in *sut.Installed, name string, rec *history.Recorder, opts sut.SessionOptions) (*Client, error) {
	return DialVia(ctx, in, name, rec, opts, nil)
}

// DialVia connects a client whose every connection, this one and each reconnection, goes
// through p (nil: straight to Postgres).
func DialVia(ctx context.Context, in *sut.Installed, name string, rec *history.Recorder, opts sut.SessionOptions, p *faultproxy.Proxy) (*Client, error) {
	c := &Client{Name: name, in: in, rec: rec, opts: opts, proxy: p}
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
	c.sess, c.ended = s, false
	c.connections.Add(1)
	if c.rec != nil {
		c.id = c.rec.NewClient()
	}
	c.mu.Unlock()
	c.pid.Store(s.PID)
	return nil
}

// RecordInto starts recording into rec (a new run's history), as a fresh porcupine client with
// nothing open. The connection is kept.
func (c *Client) RecordInto(rec *history.Recorder) {
	c.rec = rec
	c.id = rec.NewClient()
	c.connections.Store(1)
	c.inTxn, c.aborted, c.pending, c.locked = false, false, nil, nil
	c.held, c.xid, c.lastOpen = nil, "", 0
}

// Connections counts the client's connections so far.
func (c *Client) Connections() int32 { return c.connections.Load() }

// PID is the backend pid of the current session (0 while disconnected).
func (c *Client) PID() uint32 { return c.pid.Load() }

// Session is the current session.
func (c *Client) Session() *sut.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// Connected reports whether the client holds a live connection.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess != nil && !c.ended && !c.sess.Conn().IsClosed()
}

// Terminate ends the session's backend from outside (pg_terminate_backend) and waits until it
// has exited. From then on the client counts the connection gone: a statement whose answer
// came back just before the end finds the session over when it is recorded, and the next
// statement goes out on a new connection, not on the dead one.
func (c *Client) Terminate(ctx context.Context) error {
	pid := c.PID()
	if pid == 0 {
		return nil
	}
	if err := c.in.Terminate(ctx, pid); err != nil {
		return err
	}
	c.mu.Lock()
	if c.sess != nil && c.sess.PID == pid {
		c.ended = true
	}
	c.mu.Unlock()
	return nil
}

// Close ends the session.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		c.sess.Close()
		c.sess, c.ended = nil, false
		c.pid.Store(0)
	}
}

// Label is the session's name in the history: its connection's count after the first
// ("w1/2"), so that faults and operations name the same life of a session.
func (c *Client) Label() string {
	if n := c.connections.Load(); n > 1 {
		return fmt.Sprintf("%s/%d", c.Name, n)
	}
	return c.Name
}

// PrepareRun makes a session that starts a run idle and alive. On a queue whose claims hold
// the session's transaction, another session's expiry may have ended this one's backend, which
// the connection learns only when used, and a claim of an earlier run may hold it open.
func (c *Client) PrepareRun(ctx context.Context) error {
	if !c.in.Queue.Shape().TxBound {
		return c.EnsureConnected(ctx)
	}
	if s := c.Session(); s != nil && s.Conn().Ping(ctx) != nil {
		c.ConnectionLost()
	}
	if err := c.EnsureConnected(ctx); err != nil {
		return err
	}
	if s := c.Session(); s.Conn().PgConn().TxStatus() != 'I' {
		return s.Rollback(ctx)
	}
	return nil
}

// EnsureConnected reconnects a session whose connection was lost (with it went whatever its
// transaction held).
func (c *Client) EnsureConnected(ctx context.Context) error {
	if c.Connected() {
		return nil
	}
	if c.Holds() {
		return c.endSession(ctx)
	}
	c.Close()
	return c.connect(ctx)
}

// ConnectionLost handles a session whose connection is gone: an open transaction never
// committed (its COMMIT was never sent). The client reconnects, as a new life, on its next
// statement; one whose transaction held claims reconnects at once (see endSession).
func (c *Client) ConnectionLost() { _ = c.endSession(context.Background()) }

// End closes the session as the run's end does, recording what that ends.
func (c *Client) End(ctx context.Context) {
	if c.Holds() {
		_ = c.endSession(ctx) // it closes the connection, then waits for the backend to be gone
	}
	c.Close()
}

// CancelIdle cancels the session's idle transaction the seed's way (program.CancelIdle) and
// records it: its operations had no effect, its locks are gone. When that cannot be done, the
// backend is ended, so that the transaction is over for sure, and the error returned.
func (c *Client) CancelIdle(ctx context.Context) error {
	call := c.now()
	if err := c.in.CancelIdle(ctx, c.Session()); err != nil {
		_ = c.Terminate(ctx)
		c.ConnectionLost()
		return err
	}
	c.resolveTxn(call, c.now(), false, false)
	return nil
}

// Clock is the database time the client's windows are counted in: its recorder's.
func (c *Client) Clock() *dbtime.Clock {
	if c.rec != nil {
		return c.rec.DB
	}
	if c.db == nil {
		c.db = &dbtime.Clock{}
	}
	return c.db
}

func (c *Client) now() int64 {
	if c.rec == nil {
		return 0
	}
	return c.rec.Now()
}
