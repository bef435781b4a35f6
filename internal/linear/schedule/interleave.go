package schedule

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/pgerr"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// interleave runs the suffixes under the drawn schedule: at each step the chooser picks a
// session that can issue a statement (or, now and then, a fault to inject), and the run
// quiesces.
func (r *scheduledRun) interleave(d *drawnProgram) {
	r.drawn = d
	for {
		var ready, waiting, idleInTxn []*scheduledSession
		for _, sess := range r.sessions {
			switch {
			case sess.inFlight != nil:
				waiting = append(waiting, sess)
			case r.pending(sess):
				ready = append(ready, sess)
				if sess.state.InTxn {
					idleInTxn = append(idleInTxn, sess)
				}
			}
		}
		if len(ready) == 0 && len(waiting) == 0 {
			return
		}
		targets := append(append([]*scheduledSession(nil), waiting...), idleInTxn...)
		if len(ready) == 0 || (len(targets) > 0 && r.choices.Choose(0, 7, "fault?") == 7) {
			if len(targets) == 0 {
				r.quiesce(true)
				continue
			}
			sess := targets[r.choices.Choose(0, len(targets)-1, "fault target")]
			var f program.Op = program.Terminate{S: sess.state.Name}
			if sess.inFlight != nil && !chooseBool(r.choices, "terminate") {
				f = program.Interrupt{S: sess.state.Name}
			}
			r.issue(sess, f)
			r.quiesce(false)
			continue
		}
		sess := ready[r.choices.Choose(0, len(ready)-1, "next")]
		r.step(sess)
		r.quiesce(false)
	}
}

// quiesce waits until every statement in flight has either returned or waits for a lock held
// by a session that is not itself waiting, then handles the returns in session order, so that
// timestamps and the trace do not depend on which goroutine the runtime ran first. Returns
// are stamped when handled, a little later than they happened: a wider interval only allows
// more orders, so it can hide nothing the checker would otherwise accept. A cycle of waits
// (a deadlock) is left to Postgres's deadlock detector: the wait goes on until one of them
// fails. forceProgress waits until at least one statement returns.
func (r *scheduledRun) quiesce(forceProgress bool) {
	// Most statements return within a millisecond: wait that long for them before asking
	// Postgres who waits for whom.
	grace := time.Now().Add(2 * time.Millisecond)
	for _, sess := range r.sessions {
		if sess.inFlight == nil || sess.inFlight.Returned() {
			continue
		}
		sess.inFlight.ReturnedBy(grace)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		waiting := map[uint32]*scheduledSession{}
		returned := false
		for _, sess := range r.sessions {
			if sess.inFlight == nil {
				continue
			}
			if sess.inFlight.Returned() {
				returned = true
				continue
			}
			waiting[sess.client.PID()] = sess
		}
		if len(waiting) == 0 || (r.waitsSettled(waiting) && (returned || !forceProgress)) {
			break
		}
		if time.Now().After(deadline) {
			r.harnessFailed(fmt.Errorf("statements still running after 20s: %s", r.describeInFlight()))
		}
		time.Sleep(100 * time.Microsecond)
		runtime.Gosched()
	}
	for _, sess := range r.sessions {
		if sess.inFlight == nil {
			continue
		}
		if sess.inFlight.Returned() {
			r.recordReturned(sess)
			continue
		}
		if !sess.waited {
			sess.waited = true
			r.trace[sess.traceIndex] += " [waits for a lock]"
		}
		if program.SkipsLocked(sess.inFlight.Stmt) {
			r.judgeWait(sess)
		}
	}
}

// judgeWait judges a statement that must skip locked rows and waits: on a session of this run
// it breaks property 5, and the finding names the blocker, what it runs and how long its
// transaction has been open; on a backend outside the run it is the harness's fault, not the
// queue's (a leftover of another run holds the row).
func (r *scheduledRun) judgeWait(sess *scheduledSession) {
	w, err := r.scheduler.in.WaitOf(r.scheduler.ctx, sess.client.PID())
	if err != nil {
		r.harnessFailed(err)
		return
	}
	mine := map[string]bool{}
	for _, o := range r.sessions {
		mine[o.client.Name] = true
	}
	var blockers []string
	for _, b := range w.Blockers {
		if !mine[b.Session()] {
			r.harnessFailed(fmt.Errorf("%s's %s waits (%s) on a backend outside this run: %s", sess.state.Label(), sess.inFlight.Stmt.Name(), w.Event, b))
			return
		}
		blockers = append(blockers, b.String())
	}
	if len(blockers) == 0 {
		blockers = []string{"no backend any more (the wait ended as it was looked at)"}
	}
	r.failWith(model.Violate(model.PSkipLocked, "%s's %s waits (%s) for a row lock held by %s, instead of skipping the row",
		sess.state.Label(), sess.inFlight.Stmt.Name(), w.Event, strings.Join(blockers, "; ")))
}

// waitsSettled reports whether every waiting statement waits for a lock and no cycle of waits
// runs through them.
func (r *scheduledRun) waitsSettled(waiting map[uint32]*scheduledSession) bool {
	blockers := map[uint32][]uint32{}
	for pid := range waiting {
		pids, err := r.scheduler.in.Blocked(r.scheduler.ctx, pid)
		if err != nil {
			r.harnessFailed(err)
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

// describeInFlight lists the statements in flight, for a harness failure.
func (r *scheduledRun) describeInFlight() string {
	var out []string
	for _, sess := range r.sessions {
		if sess.inFlight != nil && !sess.inFlight.Returned() {
			out = append(out, sess.state.Label()+": "+sess.inFlight.Stmt.String())
		}
	}
	return strings.Join(out, ", ")
}

// recordReturned records a returned statement, in the history, the trace and the world, and
// returns its error. A failure no fault explains ends the run.
func (r *scheduledRun) recordReturned(sess *scheduledSession) error {
	f := sess.inFlight
	res := f.Wait()
	sess.inFlight, sess.last = nil, f.Stmt
	sess.state.Busy = false
	sess.results = append(sess.results, res)
	answer := answerText(f.Stmt, res, sess.waited)
	pid, connections := sess.client.PID(), sess.client.Connections()
	v := sess.client.RecordAnswer(f)
	if v != nil && pgerr.Code(res.Err) == "40P01" {
		v = r.deadlock(sess, f.Stmt, res.Err)
	}
	// Lost: also when the client reconnected at once (a session whose claims held its
	// transaction waits for its old backend to be gone that way).
	lost := !sess.client.Connected() || sess.client.Connections() != connections
	if lost && pid != 0 {
		// A lost connection's backend ends by itself (a proxy cut or drop closed its socket):
		// the run goes on once it has, so that no statement after it can wait for its locks.
		if err := r.scheduler.in.WaitGone(r.scheduler.ctx, pid); err != nil {
			r.harnessFailed(err)
		}
	}
	if r.timed && res.Clock.Known() {
		answer += "  @" + f.At.String()
	}
	if f == r.aimed {
		r.aimed = nil
		if l, ok := r.world.Approach.Next(f.At); ok && res.Clock.Known() {
			answer += " (" + l.String() + ")"
		}
	}
	r.traceAnswer(sess, answer)
	r.world.Apply(sess.state, f.Stmt, res, f.At)
	if res.Err != nil && lost {
		r.world.Lost(sess.state)
	}
	sess.client.SyncHolding(sess.state)
	// On a queue whose claims hold a transaction, another session's expiry ends the holder's
	// backend: that is the lease ending, not a fault.
	expired := r.world.TxBound && (lost || pgerr.Code(res.Err) == "57P01")
	if res.Err != nil && !f.Faulted && !expired && !errors.Is(res.Err, sut.ErrRolledBack) {
		// Nothing but the harness's own faults may make a statement fail here.
		if v != nil {
			r.failWith(v)
		}
		r.harnessFailed(fmt.Errorf("%s: %s failed though no fault was injected: %w", sess.state.Label(), f.Stmt, res.Err))
	}
	return res.Err
}
