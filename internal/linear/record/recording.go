package record

import (
	"errors"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// recording is where a statement whose answer came back records itself (program.Recording):
// in the history, as of the client's transaction, at the times the flight was called and
// returned.
type recording struct {
	c   *Client
	f   *Flight
	ret int64
}

func (r *recording) op(in model.Input, out model.Output) history.Op {
	in.At = r.f.At
	return history.Op{Client: r.c.id, Session: r.c.Label(), Input: in, Output: out, Call: r.f.call, Return: r.ret}
}

func (r *recording) Write(in model.Input, out model.Output) {
	if r.c.inTxn {
		r.c.pending = append(r.c.pending, r.op(in, out)) // takes effect when the transaction commits
		return
	}
	r.c.add(r.op(in, out))
}

func (r *recording) Read(in model.Input, out model.Output) { r.c.add(r.op(in, out)) }

func (r *recording) Failed(in model.Input, err error) {
	c := r.c
	if c.inTxn {
		// A failed statement aborts its transaction, which can then only roll back: it returns
		// with the transaction's other operations when that ends (its ROLLBACK, or the
		// connection's loss), as one of them.
		c.pending = append(c.pending, r.op(in, model.Output{Outcome: model.Aborted, Err: ErrorText(err)}))
		c.aborted = true
		return
	}
	op := r.op(in, model.Output{Outcome: outcomeOf(err), Err: ErrorText(err)})
	if op.Output.Outcome == model.Unknown {
		op.Return = history.Never
	}
	c.add(op)
	if op.Return == history.Never {
		c.startNewClient()
	}
}

func (r *recording) Aborted() {
	if r.c.inTxn {
		r.c.aborted = true
	}
}

func (r *recording) Begin() { r.c.inTxn = true }

func (r *recording) End(commit bool, err error) {
	c := r.c
	unknown := commit && err != nil && !errors.Is(err, sut.ErrRolledBack) && outcomeOf(err) == model.Unknown && !c.aborted
	c.resolveTxn(r.f.call, r.ret, commit && err == nil && !c.aborted, unknown)
}

func (r *recording) Locked(job int64) {
	r.c.locked = append(r.c.locked, job)
	r.c.add(history.Op{Client: r.c.id, Session: r.c.Label(), Input: model.Input{Kind: model.OpLock, Job: job}, Call: r.f.call, Return: r.ret})
}

func (r *recording) Claimed(job, gen int64) {
	c := r.c
	if !c.in.Queue.Shape().TxBound {
		return
	}
	if c.held == nil {
		c.held = map[int64]int64{}
	}
	c.held[job] = gen
	// Its transaction was open while the claim ran; the check after the statement learns its id.
	c.lastOpen, c.xid = max(c.lastOpen, r.f.call), ""
}

func (r *recording) Completed(job int64) {
	if r.c.in.Queue.Shape().TxBound {
		delete(r.c.held, job)
	}
}

func (c *Client) add(op history.Op) {
	if c.rec != nil {
		c.rec.Add(op)
	}
}

// startNewClient gives the session a new porcupine client id after an unknown outcome: that
// operation never returns, so the next one must not belong to the same client.
func (c *Client) startNewClient() {
	if c.rec != nil {
		c.id = c.rec.NewClient()
	}
}

// resolveTxn resolves the open transaction's operations: committed, they return with the
// COMMIT; rolled back, they had no effect; when the COMMIT's answer was lost, their outcome is
// unknown.
func (c *Client) resolveTxn(call, ret int64, committed, unknown bool) {
	for _, op := range c.pending {
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
		c.add(history.Op{Client: c.id, Session: c.Label(), Input: model.Input{Kind: model.OpUnlock, Job: id}, Output: out, Call: call, Return: at})
	}
	if unknown {
		c.startNewClient()
	}
	c.pending, c.locked, c.inTxn, c.aborted = nil, nil, false, false
}
