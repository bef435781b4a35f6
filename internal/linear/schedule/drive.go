package schedule

import "github.com/pgqcheck/pgqcheck/internal/program"

// runDrawn runs a drawn program: its prefix one operation at a time, each to its end, then
// the sessions' suffixes interleaved.
func (r *scheduledRun) runDrawn(d *drawnProgram) {
	for _, op := range d.prefix {
		sess := r.sessionOf(op)
		sess.parts = flatten(op)
		for r.pending(sess) {
			r.step(sess)
			r.quiesce(false)
		}
	}
	for i, k := range d.suffixLengths {
		r.sessions[i].undrawn = k
	}
	r.trace = append(r.trace, "-- concurrent --")
	r.interleave(d)
}

// replay runs a saved program, line after line, and leaves nothing open after it.
func (r *scheduledRun) replay(saved *program.Program) {
	for _, op := range saved.Ops {
		r.replayLine(op)
	}
	r.closeLeftovers()
}

// replayLine issues one line of a saved program, if it applies now.
func (r *scheduledRun) replayLine(op program.Op) {
	sess := r.sessionOf(op)
	if !op.Applicable(r.world) {
		return
	}
	if _, ok := op.(program.Step); !ok {
		// A compound line (written by hand) runs its parts one after another.
		for _, p := range flatten(op) {
			if p.Applicable(r.world) {
				r.issue(sess, p)
				r.quiesce(false)
			}
		}
		return
	}
	r.issue(sess, op)
	r.quiesce(false)
}

// pending reports whether a session has statements left to issue: a part of its current
// operation that applies, or suffix operations not drawn yet. It draws nothing: a session's
// next operation is drawn when the session is chosen to move, so the choices stay in the
// order the schedule makes them.
func (r *scheduledRun) pending(sess *scheduledSession) bool {
	r.dropInapplicable(sess)
	return len(sess.parts) > 0 || (sess.undrawn > 0 && r.choices != nil)
}

// dropInapplicable drops the parts of the current operation that do not apply now.
func (r *scheduledRun) dropInapplicable(sess *scheduledSession) {
	for len(sess.parts) > 0 && !sess.parts[0].Applicable(r.world) {
		sess.parts = sess.parts[1:]
	}
}

// step issues the next part of a session's current operation, drawing its next suffix
// operation when the current one is over.
func (r *scheduledRun) step(sess *scheduledSession) {
	for r.dropInapplicable(sess); len(sess.parts) == 0; r.dropInapplicable(sess) {
		sess.proxyFault = nil // its operation is over: a fault whose statement did not apply goes with it
		if sess.undrawn == 0 || r.choices == nil {
			return // its last operation had nothing it could issue
		}
		sess.undrawn--
		for _, op := range r.drawn.next(r.choices, sess.index) {
			sess.parts = append(sess.parts, flatten(op)...)
		}
	}
	op := sess.parts[0]
	sess.parts = sess.parts[1:]
	r.issue(sess, op)
}

// drain ends the run's own operations: no proxy fault is left waiting, every row the table
// holds is known, and the drain (program.Drain) expires every lease and completes every job on
// the first session.
func (r *scheduledRun) drain() {
	r.dropProxyFaults()
	r.learnTableRows()
	r.trace = append(r.trace, "-- drain --")
	r.draining = true
	if err := (program.Drain{S: program.ScheduledSession(0)}).Run(r.scheduler.ctx, r); err != nil {
		r.harnessFailed(err)
	}
}
