package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"

	"pgqcheck/faultproxy"
	"pgqcheck/generate"
	"pgqcheck/internal/pgerr"
	"pgqcheck/linear/history"
	"pgqcheck/program"
	"pgqcheck/sut"
)

// Network faults: a client may connect through the fault proxy, which then drops, delays, cuts
// or stalls the next statement it is told to. A dropped reply or a cut connection leaves the
// statement's outcome unknown, and the client records it so (it returns at Never: possibly
// applied), exactly as any statement whose connection died after it was sent; a delay or a
// stall only makes the answer late, and the answer, when it comes, is recorded as it is.

// DialVia connects a client whose every connection, this one and each reconnection, goes
// through p.
func DialVia(ctx context.Context, in *sut.Installed, name string, rec *history.Recorder, opts sut.SessionOptions, p *faultproxy.Proxy) (*Client, error) {
	c := &Client{Name: name, in: in, rec: rec, opts: opts, proxy: p}
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// sessionOptions are the client's options for its next connection. A proxied client's
// connection is the link dialed while connecting (opened is called once it is up); pgx dials
// again later for each cancel request it sends, and those links carry no session.
func (c *Client) sessionOptions() (o sut.SessionOptions, opened func()) {
	o = c.opts
	if c.proxy == nil {
		return o, func() {}
	}
	var mu sync.Mutex
	var last *faultproxy.Link
	done := false
	o.Dial = c.proxy.DialFunc(func(l *faultproxy.Link) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			last = l
		}
	})
	return o, func() {
		mu.Lock()
		defer mu.Unlock()
		done = true
		c.link.Store(last)
	}
}

// Proxied reports whether the client's connections go through the fault proxy.
func (c *Client) Proxied() bool { return c.proxy != nil }

func (c *Client) armed() bool {
	l := c.link.Load()
	return l != nil && l.Armed()
}

// Inject arms f for the next statement the client sends on its current connection. When it
// hits, it is recorded in the history's faults, on the session's current life. It reports
// false when the client is not proxied or has no connection.
func (c *Client) Inject(f faultproxy.Fault) bool {
	l := c.link.Load()
	if l == nil || !c.Connected() {
		return false
	}
	target := c.label()
	l.Arm(f, func() {
		if c.rec != nil {
			c.rec.Fault(string(f.Kind), target)
		}
	})
	return true
}

// Disarm drops a fault armed and not yet hit on the client's connection.
func (c *Client) Disarm() {
	if l := c.link.Load(); l != nil {
		l.Disarm()
	}
}

// drawNetFault draws a proxy fault from generate.NetFaultWeights.
func drawNetFault(rng *rand.Rand) faultproxy.Fault {
	f := faultproxy.Fault{Kind: faultproxy.Kind(draw(rng, generate.NetFaultWeights))}
	if !f.Kind.Lost() {
		f.For = generate.NetFaultHolds[rng.IntN(len(generate.NetFaultHolds))]
	}
	return f
}

// netFault arms a proxy fault on a worker's connection: its next statement takes it.
func (ch *chaos) netFault(w *worker) {
	if w.c.Proxied() {
		w.c.Inject(drawNetFault(ch.rng))
	}
}

// A drawn proxy fault waits on its session (sched.fault) for the statement it hits, and is
// armed just before that statement is sent; the program and the trace show it there. A fault
// whose statement does not apply when it comes up is dropped with its operation, and none is
// ever left for the drain, whose answers the accounting needs whole.

// proxyFault keeps a proxy fault for the session's next statement.
func (r *srun) proxyFault(x *sched, f program.ProxyFault) { x.fault = &f }

// armFault arms the session's waiting proxy fault, if any, on the connection its next statement
// goes out on (connecting it first if it was lost).
func (r *srun) armFault(x *sched) {
	f := x.fault
	if f == nil {
		return
	}
	x.fault = nil
	if !r.draining && !r.inProcedure {
		r.ran = append(r.ran, *f)
	}
	r.trace = append(r.trace, r.line(x, *f))
	if err := x.c.ensure(r.s.ctx); err != nil {
		r.harness(err)
		return
	}
	if !x.c.Inject(f.Fault()) {
		r.harness(fmt.Errorf("%s: cannot arm %s: the session is not connected through the fault proxy", x.s.Label(), f.Fault()))
	}
}

// dropFaults forgets every proxy fault still waiting, and disarms every connection.
func (r *srun) dropFaults() {
	for _, x := range r.x {
		x.fault = nil
		x.c.Disarm()
	}
}

// knowTable makes every row the table holds known to the drain, which expires only the leases
// of jobs it knows: an enqueue whose answer a fault dropped created a job no one was told of.
// It reads them with an unrecorded snapshot on the first session.
func (r *srun) knowTable() {
	x := r.x[0]
	if err := x.c.ensure(r.s.ctx); err != nil {
		r.harness(err)
		return
	}
	rows, _, err := x.c.Session().Snapshot(r.s.ctx)
	if err != nil && r.w.TxBound && (!x.c.Connected() || pgerr.Code(err) == "57P01") {
		// Another session's expiry ended this one's backend, and with it the lease it held.
		x.c.Lost()
		r.w.Lost(x.s)
		if err = x.c.ensure(r.s.ctx); err == nil {
			rows, _, err = x.c.Session().Snapshot(r.s.ctx)
		}
	}
	if err != nil {
		r.harness(err)
		return
	}
	for _, row := range rows {
		if !r.w.Known(row.ID) {
			r.w.Jobs = append(r.w.Jobs, row.ID)
		}
	}
}
