package linear

import (
	"fmt"

	"pgqcheck/internal/pgerr"
	"pgqcheck/program"
)

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
	if err := x.c.EnsureConnected(r.s.ctx); err != nil {
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
	if err := x.c.EnsureConnected(r.s.ctx); err != nil {
		r.harness(err)
		return
	}
	rows, _, err := x.c.Session().Snapshot(r.s.ctx)
	if err != nil && r.w.TxBound && (!x.c.Connected() || pgerr.Code(err) == "57P01") {
		// Another session's expiry ended this one's backend, and with it the lease it held.
		x.c.ConnectionLost()
		r.w.Lost(x.s)
		if err = x.c.EnsureConnected(r.s.ctx); err == nil {
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
