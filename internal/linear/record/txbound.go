package record

import (
	"context"
	"errors"
	"sort"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// On a queue whose claims hold the session's transaction (TxBound) the lease is that
// transaction, and the history must say when it ended: an expiry of the claim's generation,
// recorded as an operation of a client of its own, somewhere between the last moment the
// transaction was known open and the moment it was known over.
//
// That a statement of a Go queue answered says nothing of the session: a completion the queue
// refuses by its handle alone answers without a round trip, also when another session's expiry
// has ended this session's backend long before. So after each statement of a session that
// holds a job, the client asks the session itself which transaction it is in.

// Holds reports whether the session's transaction holds a job a claim took.
func (c *Client) Holds() bool { return len(c.held) > 0 }

// SyncHolding tells the world's session what the client saw: the transaction that held its
// claim, the lease, ended.
func (c *Client) SyncHolding(s *program.Session) {
	if s.HoldsClaimTxn && !c.Holds() {
		s.HoldsClaimTxn = false
	}
}

// checkHeld asks the session whether the transaction its claims hold is still open, and records
// the leases as ended when it is not.
func (c *Client) checkHeld(ctx context.Context) {
	conn := c.Session().Conn()
	call := c.now()
	var xid *string
	err := conn.QueryRow(ctx, "SELECT pg_current_xact_id_if_assigned()::text").Scan(&xid)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		switch {
		case xid == nil || conn.PgConn().TxStatus() == 'I':
			c.recordLeasesEnded(true)
			return
		case c.xid == "":
			c.xid = *xid // the first check after the claim: the claim's transaction
		case *xid != c.xid:
			c.recordLeasesEnded(true) // that transaction ended and another began
			return
		}
		c.lastOpen = call
	case conn.IsClosed():
		_ = c.endSession(ctx)
	case errors.As(err, &pgErr):
		// The backend answered outside any transaction, or inside a failed one: Postgres aborts
		// a transaction, and lets go of its row locks, when one of its statements fails, though
		// the session stays in the failed block until it rolls back.
		c.recordLeasesEnded(true)
		return
	}
	// Otherwise the question was never answered (the run is stopping): nothing is learnt.
}

// recordLeasesEnded records that the leases of the jobs this session's transaction held ended with
// it: each an expiry of its claim's generation after the moment the transaction was last known
// open, and, when sure, before now; when not sure, at some time after that (an unknown outcome).
func (c *Client) recordLeasesEnded(sure bool) {
	if len(c.held) == 0 || c.rec == nil {
		c.held, c.xid = nil, ""
		return
	}
	ids := make([]int64, 0, len(c.held))
	for id := range c.held {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	now := c.now()
	for _, id := range ids {
		in := model.Input{Kind: model.OpExpire, Job: id, Gen: c.held[id], At: model.Window{From: c.Clock().Latest(), To: model.Never}}
		op := history.Op{Client: c.rec.NewClient(), Session: c.Label() + " ended", Input: in, Call: c.lastOpen, Return: max(now, c.lastOpen+1)}
		if !sure {
			op.Output, op.Return = model.Output{Outcome: model.Unknown}, history.Never
		}
		c.add(op)
	}
	c.held, c.xid = nil, ""
}

// endSession ends the session as a lost connection does (ConnectionLost): its open transaction
// never committed, and its connection is closed. The leases its transaction held end when its
// backend has exited, which a backend does a moment after its connection closed (it lets go of
// its row locks then, not before): so the client reconnects at once, as a new life, and waits
// on its new connection for the old backend to be gone before it records them as ended; when
// it cannot see that (the new connection failed too), as ended at some time after.
func (c *Client) endSession(ctx context.Context) error {
	if c.inTxn {
		now := c.now()
		c.resolveTxn(now, c.now(), false, false)
	}
	held, lastOpen, old := c.held, c.lastOpen, c.PID()
	c.held = nil
	c.Close()
	if len(held) == 0 {
		return nil
	}
	err := c.connect(ctx)
	gone := err == nil && c.Session().WaitGone(ctx, old) == nil
	c.held, c.lastOpen = held, lastOpen
	c.recordLeasesEnded(gone)
	return err
}

// Crash ends the session's backend from inside, as a worker process that dies takes its
// connection with it, and reconnects; what its transaction held ends as on any lost
// connection. It uses only its own connection: the harness's admin connection belongs to the
// chaos goroutine.
func (c *Client) Crash(ctx context.Context) error {
	if s := c.Session(); s != nil {
		_, _ = s.Conn().Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
	}
	if err := c.endSession(ctx); err != nil {
		return err
	}
	return c.EnsureConnected(ctx)
}
