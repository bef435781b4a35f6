package schedule

import (
	"fmt"

	"github.com/pgqcheck/pgqcheck/internal/pgerr"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// injectFault cancels a session's statement or ends its backend. A session idle in its
// transaction is cancelled the seed's way (parked in pg_sleep, then cancelled, then rolled
// back).
func (r *scheduledRun) injectFault(sess *scheduledSession, f program.Fault) {
	ctx := r.scheduler.ctx
	kind := program.FaultInterrupt
	if _, ok := f.(program.Terminate); ok {
		kind = program.FaultTerminate
	}
	r.trace = append(r.trace, r.traceText(sess, f))
	r.rec.Fault(string(kind), sess.client.Label())
	if sess.inFlight != nil {
		sess.inFlight.Faulted = true
	}
	switch {
	case kind == program.FaultInterrupt && sess.inFlight != nil:
		if err := r.scheduler.in.Cancel(ctx, sess.client.PID()); err != nil {
			r.harnessFailed(err)
		}
	case kind == program.FaultInterrupt:
		sess.state.Busy = true // parked in pg_sleep until the cancel lands
		if err := sess.client.CancelIdle(ctx); err != nil {
			r.harnessFailed(err)
		}
		sess.state.Busy = false
		r.world.Apply(sess.state, program.RollbackStmt, program.Result{}, model.Window{})
	default:
		// The client counts the connection gone even where its statement's answer came back
		// between the choice of target and the end.
		if err := sess.client.Terminate(ctx); err != nil {
			r.harnessFailed(err)
		}
		if sess.inFlight == nil { // idle: it is gone with the backend
			sess.client.ConnectionLost()
			r.world.Lost(sess.state)
		}
	}
}

// A drawn proxy fault waits on its session (scheduledSession.proxyFault) for the statement it
// hits, and is armed just before that statement is sent; the program and the trace show it
// there. A fault whose statement does not apply when it comes up is dropped with its
// operation, and none is ever left for the drain, whose answers the accounting needs whole.

// holdProxyFault keeps a proxy fault for the session's next statement.
func (r *scheduledRun) holdProxyFault(sess *scheduledSession, f program.ProxyFault) {
	sess.proxyFault = &f
}

// armProxyFault arms the session's waiting proxy fault, if any, on the connection its next
// statement goes out on (connecting it first if it was lost).
func (r *scheduledRun) armProxyFault(sess *scheduledSession) {
	f := sess.proxyFault
	if f == nil {
		return
	}
	sess.proxyFault = nil
	if !r.draining && !r.inProcedure {
		r.issued = append(r.issued, *f)
	}
	r.trace = append(r.trace, r.traceText(sess, *f))
	if err := sess.client.EnsureConnected(r.scheduler.ctx); err != nil {
		r.harnessFailed(err)
		return
	}
	if !sess.client.Inject(f.Fault()) {
		r.harnessFailed(fmt.Errorf("%s: cannot arm %s: the session is not connected through the fault proxy", sess.state.Label(), f.Fault()))
	}
}

// dropProxyFaults forgets every proxy fault still waiting, and disarms every connection.
func (r *scheduledRun) dropProxyFaults() {
	for _, sess := range r.sessions {
		sess.proxyFault = nil
		sess.client.Disarm()
	}
}

// learnTableRows makes every row the table holds known to the drain, which expires only the
// leases of jobs it knows: an enqueue whose answer a fault dropped created a job no one was
// told of. It reads them with an unrecorded snapshot on the first session.
func (r *scheduledRun) learnTableRows() {
	sess := r.sessions[0]
	if err := sess.client.EnsureConnected(r.scheduler.ctx); err != nil {
		r.harnessFailed(err)
		return
	}
	rows, _, err := sess.client.Session().Snapshot(r.scheduler.ctx)
	if err != nil && r.world.TxBound && (!sess.client.Connected() || pgerr.Code(err) == "57P01") {
		// Another session's expiry ended this one's backend, and with it the lease it held.
		sess.client.ConnectionLost()
		r.world.Lost(sess.state)
		if err = sess.client.EnsureConnected(r.scheduler.ctx); err == nil {
			rows, _, err = sess.client.Session().Snapshot(r.scheduler.ctx)
		}
	}
	if err != nil {
		r.harnessFailed(err)
		return
	}
	for _, row := range rows {
		if !r.world.Known(row.ID) {
			r.world.Jobs = append(r.world.Jobs, row.ID)
		}
	}
}
