package check

import (
	"fmt"
	"sort"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// crashChecks judges what a crash may not do, for each crash and restart in the history.
// Porcupine judges every job's history across the crash as any other; these name the crash,
// and cannot time out:
//   - an acknowledged enqueue survives: the job is there after the restart;
//   - an acknowledged completion survives: a job done before the crash (its completion
//     returned 1, or a snapshot saw it done) is done after the restart, is not claimed again
//     and accepts no completion again;
//   - an acknowledged expiry survives: a job expired before the crash after the claim of its
//     newest generation returned, and touched by no claim, expiry, renewal or failure since,
//     is not seen running live at that generation after the restart, nor (on a fenced queue)
//     completed by it;
//   - no generation goes back: after the restart no snapshot shows a job at a generation
//     lower than one acknowledged before the crash, and no claim returns one at or below it;
//   - leases keep running on the database clock: a job claimed with a timed lease before the
//     crash and touched by nothing since is seen live while its lease runs and not live once
//     it has ended, whether it ended while the server was down or after the restart.
//
// The crash fault is recorded once the killed server is gone. A statement sent before it and
// answered was answered by the killed server, whenever the client read the answer: it was
// acknowledged before the crash. A statement sent after it and answered was answered by the
// restarted server (the restart fault only marks when Restart returned; sessions may
// reconnect a moment before).
func crashChecks(h *history.History) []*model.Violation {
	var crashes []int64
	for _, f := range h.Faults {
		if f.Kind == history.FaultCrash {
			crashes = append(crashes, f.At)
		}
	}
	sort.Slice(crashes, func(i, j int) bool { return crashes[i] < crashes[j] })
	var out []*model.Violation
	seen := map[string]bool{}
	for _, crash := range crashes {
		for _, v := range acrossCrash(h, crash) {
			if !seen[v.Error()] {
				seen[v.Error()] = true
				out = append(out, v)
			}
		}
	}
	return out
}

// acrossCrash compares what was acknowledged before one crash with what is seen after it.
func acrossCrash(h *history.History, crash int64) []*model.Violation {
	type fact struct {
		what string
		op   history.Op
	}
	existed := map[int64]bool{}        // jobs whose enqueue was acknowledged
	done := map[int64]fact{}           // job -> what showed it done
	gen := map[int64]fact{}            // job -> the highest generation acknowledged
	claims := map[int64][]history.Op{} // timed claims acknowledged before the crash, per job
	writes := map[int64][]history.Op{} // anything that may change the job
	expired := map[int64]history.Op{}  // the last expiry acknowledged before the crash, per job
	for _, o := range h.Ops {
		f, out := model.FactsOf(o.Input, o.Output), o.Output
		if f.Named && f.Writes && out.Outcome != model.NotSent && out.Outcome != model.Aborted {
			writes[f.Job] = append(writes[f.Job], o)
		}
		// Sent before the crash and answered: only the killed server can have answered it,
		// whenever the client got round to reading the answer.
		if o.Call >= crash || out.Outcome != model.Returned {
			continue
		}
		switch {
		case f.Creates:
			existed[f.Job] = true
		case f.Expires:
			if e, ok := expired[f.Job]; !ok || o.Call > e.Call {
				expired[f.Job] = o
			}
		case f.Ends && f.Accepted:
			done[f.Job] = fact{fmt.Sprintf("completion of generation %d returned 1", f.Gen), o}
		case f.Observes && out.Found && out.State == model.Done:
			if _, ok := done[f.Job]; !ok {
				done[f.Job] = fact{"a snapshot saw it done", o}
			}
		}
		if f.Took && o.Input.Lease > 0 {
			claims[f.Job] = append(claims[f.Job], o)
		}
		if (f.Took || f.Observes && out.Found) && out.Gen > gen[f.Job].op.Output.Gen {
			gen[f.Job] = fact{model.DescribeOp(o.Input, out), o}
		}
	}
	var out []*model.Violation
	for _, o := range h.Ops {
		res := o.Output
		f := model.FactsOf(o.Input, res)
		if o.Call <= crash || res.Outcome != model.Returned || !f.Named {
			continue
		}
		id := f.Job
		d, wasDone := done[id]
		g, hadGen := gen[id]
		switch {
		case f.Observes && !res.Found && (existed[id] || wasDone || hadGen):
			out = append(out, model.Violate(model.PRecovery, "job %d existed before the crash (its enqueue was acknowledged, or a claim or snapshot saw it) and is missing after the restart", id))
		case f.Observes && wasDone && res.State != model.Done:
			out = append(out, model.Violate(model.PDoneOnce, "job %d was done before the crash (%s, by %s) and is %s after the restart: an acknowledged completion was lost", id, d.what, d.op.Session, res.State))
		case f.Took && wasDone:
			out = append(out, model.Violate(model.PDoneOnce, "job %d was done before the crash (%s, by %s), and a claim after the restart returned it: an acknowledged completion was lost", id, d.what, d.op.Session))
		case f.Ends && f.Accepted && wasDone:
			out = append(out, model.Violate(model.PDoneOnce, "job %d was done before the crash (%s, by %s), and a completion after the restart was accepted again", id, d.what, d.op.Session))
		}
		switch {
		case !hadGen:
		case f.Observes && res.Found && res.Gen < g.op.Output.Gen:
			out = append(out, model.Violate(model.PGenerations, "job %d was at generation %d before the crash (%s, by %s) and at generation %d after the restart: a generation went back", id, g.op.Output.Gen, g.what, g.op.Session, res.Gen))
		case f.Took && res.Gen <= g.op.Output.Gen:
			out = append(out, model.Violate(model.PGenerations, "job %d was at generation %d before the crash (%s, by %s), and a claim after the restart returned generation %d: a generation was reused", id, g.op.Output.Gen, g.what, g.op.Session, res.Gen))
		}
		if e, ok := expired[id]; ok && hadGen && !h.Shape.NoGeneration && expiryLost(h, e, g.op, o) {
			seen := "a snapshot after the restart shows that generation's lease live"
			if f.Ends {
				seen = fmt.Sprintf("a completion of that generation after the restart (by %s) was accepted", o.Session)
			}
			out = append(out, model.Violate(model.PRecovery, "job %d was expired before the crash (by %s, after %s returned), and %s: an acknowledged expiry was lost", id, e.Session, g.what, seen))
		}
		if f.Observes && res.Found && res.State == model.Running {
			for _, c := range claims[id] {
				if v := leaseAcross(c, o, writes[id]); v != nil {
					out = append(out, v)
				}
			}
		}
	}
	return out
}

// leaseAcross judges a snapshot o taken after the restart of a job claimed (c) with a timed
// lease before the crash, if nothing but c may have changed the job before o returned.
func leaseAcross(c, o history.Op, writes []history.Op) *model.Violation {
	for _, w := range writes {
		if w.Call != c.Call && w.Call < o.Return {
			return nil
		}
	}
	if o.Output.Gen != c.Output.Gen {
		return nil
	}
	claimAt, seenAt, lease := c.Input.At, o.Input.At, c.Input.Lease
	if claimAt.To == model.Never || seenAt.To == model.Never {
		return nil
	}
	switch {
	case seenAt.To < claimAt.From+lease && !o.Output.Live:
		return model.Violate(model.PDBTime, "job %d: its %v lease, claimed at %v before the crash, ends at %v on the database clock, yet a snapshot after the restart at %v saw it not live", c.Output.Job, lease, claimAt.From, claimAt.From+lease, seenAt.To)
	case seenAt.From > claimAt.To+lease && o.Output.Live:
		return model.Violate(model.PDBTime, "job %d: its %v lease, claimed at %v before the crash, ended by %v on the database clock, yet a snapshot after the restart at %v saw it live", c.Output.Job, lease, claimAt.To, claimAt.To+lease, seenAt.From)
	}
	return nil
}

// expiryLost reports whether o, answered after the restart, shows the lease of the generation
// c (a claim, or a snapshot) saw, which expiry e ended before the crash, still running: a
// snapshot sees that generation running live, or the queue, which promises fencing, accepts a
// completion of it. e was called after c returned, and nothing else that may change the job
// (claim, expire, renew, fail, complete or rescue it) was called between e and o's return.
func expiryLost(h *history.History, e, c, o history.Op) bool {
	f, res := model.FactsOf(o.Input, o.Output), o.Output
	switch {
	case e.Call < c.Return:
		return false
	case f.Observes && res.Found && res.State == model.Running && res.Live && res.Gen == c.Output.Gen:
	case f.Ends && f.Accepted && f.Gen == c.Output.Gen && !h.Shape.Unfenced:
	default:
		return false
	}
	for _, w := range h.Ops {
		if w.Call <= e.Call || w.Call >= o.Return || w.Call == o.Call && w.Session == o.Session {
			continue
		}
		// A claim whose answer was lost may have taken the job, but at a newer generation than
		// the snapshot's: only what names the job counts.
		if wf := model.FactsOf(w.Input, w.Output); wf.Writes && wf.Named && wf.Job == e.Input.Job {
			return false
		}
	}
	return true
}
