package record

import (
	"context"
	"errors"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Flight is a statement sent and not yet recorded.
type Flight struct {
	Stmt program.Stmt
	// Faulted: the harness cancelled or terminated this statement, armed a proxy fault for it,
	// or sent it into a failed transaction, so its failure is expected.
	Faulted bool

	// At is the database time the statement ran in, once it was recorded.
	At model.Window

	ctx   context.Context // the statement's, for what the client asks the session after it
	call  int64
	floor time.Duration // the latest database time read before it was sent
	done  chan program.Result
	res   *program.Result
}

// Send sends a statement on its own goroutine and returns at once.
func (c *Client) Send(ctx context.Context, f *Flight) error {
	if err := c.EnsureConnected(ctx); err != nil {
		return err
	}
	s := c.Session()
	f.done = make(chan program.Result, 1)
	f.ctx = ctx
	f.call = c.now()
	f.floor = c.Clock().Latest()
	// A statement sent into a failed transaction can only fail: the failure that broke it was
	// the one to judge (or the harness's own, a cancel that hit a clock reading).
	f.Faulted = f.Faulted || c.faultArmed() || s.Conn().PgConn().TxStatus() == 'E'
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

// ReturnedBy waits until the statement's answer comes back or deadline passes, and reports
// whether it came back.
func (f *Flight) ReturnedBy(deadline time.Time) bool {
	if f.res != nil {
		return true
	}
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case r := <-f.done:
		f.res = &r
		return true
	case <-wait.C:
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
	return r, c.RecordAnswer(f), nil
}

// RecordAnswer records a statement whose answer came back (Wait or Returned first). It
// returns the violation an unexpected error is (property 9, or a claim of two rows), which is
// also kept in the history's findings; errors the harness caused are not violations.
func (c *Client) RecordAnswer(f *Flight) *model.Violation {
	r := f.Wait()
	ret := c.now()
	st := f.Stmt
	f.At = c.Clock().Window(r.Clock, f.floor)
	var v *model.Violation
	if r.Err != nil && !errors.Is(r.Err, sut.ErrRolledBack) && !f.Faulted {
		if v = unexpected(st.Name(), r.Err); v != nil && c.rec != nil {
			c.rec.Finding(v)
		}
	}
	// Also a statement whose answer came back and whose closing clock reading found the
	// connection gone.
	dead := !c.Connected()
	st.Record(&recording{c: c, f: f, ret: ret}, r)
	if dead {
		_ = c.endSession(f.ctx) // a failed reconnection is the next statement's to report
	} else if len(c.held) > 0 {
		c.checkHeld(f.ctx)
	}
	return v
}
