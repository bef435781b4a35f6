package linear

import (
	"context"
	"fmt"
	"sort"
	"time"

	"pgqcheck/model"
	"pgqcheck/program"
)

// Crasher is a server a stress run may crash and restart: *pgserver.Server started with
// Options.Crash is one.
type Crasher interface {
	// Crash kills the postmaster with SIGKILL and returns once the server is gone.
	Crash(ctx context.Context) error
	// Restart starts it again on the same data directory and returns once it accepts sessions.
	Restart(ctx context.Context) error
}

// The faults of a crash round, as the history's Faults name them.
const (
	FaultCrash   = "crash"
	FaultRestart = "restart"
	CrashTarget  = "server" // what they befall: every session at once
)

// CrashProbeLeases are the leases the crash probe claims just before each crash, one job each,
// and never completes: leases running across the crash. The short one ends about when the
// server comes back (a local restart took a quarter to one and a half seconds here, a docker
// one one to five), and the probe watches its end; the long one outlives any restart, so the
// restarted server must still show it live.
var CrashProbeLeases = []time.Duration{time.Second, 30 * time.Second}

// watchWithin: the probe watches a lease's end only if it comes this soon after the restart.
const watchWithin = 2 * time.Second

// afterRestart is how long traffic goes on at least after the last restart, so that every
// crash round has traffic on the restarted server.
const (
	afterRestart    = 300 * time.Millisecond
	afterRestartOps = 200
)

// Crash is one crash and restart of a stress run.
type Crash struct {
	Down   time.Duration   // from the kill until the restarted server accepted sessions
	Probes []program.Token // the probe's claims just before the crash
}

// crashRounds crashes and restarts the server cfg.Crashes times during the traffic, evenly
// spread over cfg.Duration, while workers, enqueuer and chaos run on. Just before each crash
// the probe enqueues jobs and claims one with each of CrashProbeLeases; after each restart it
// observes every job at once, then its jobs around the ends of their leases, if soon. It returns once
// the restarted server has seen afterRestart and afterRestartOps of traffic.
func (r *run) crashRounds(start time.Time, dial func(string) (*Client, error)) ([]Crash, error) {
	cfg := r.cfg
	pc, err := dial("probe")
	if err != nil {
		return nil, err
	}
	probe := newActor(pc, r.in.Queue)
	probe.halt = r.halt
	var out []Crash
	var last time.Time
	opsAtRestart := 0
	for i := 0; i < cfg.Crashes && !r.stopped() && r.rec.Len() < cfg.MaxOps; i++ {
		at := start.Add(cfg.Duration * time.Duration(i+1) / time.Duration(cfg.Crashes+1))
		if !r.sleepUntil(at) {
			break
		}
		var c Crash
		for _, lease := range CrashProbeLeases {
			// A job of its own first, so that the claim finds one even when the workers
			// have emptied the queue; a few times, since a worker may take it first.
			for try := 0; try < 5; try++ {
				if res := probe.one(r.ctx, program.Enqueue{S: pc.Name, N: 1}); res.Err == nil {
					r.noteEnqueued(res.Out.Job)
				}
				if res := probe.one(r.ctx, program.Claim{S: pc.Name, Lease: lease}); res.Err == nil && res.Out.Found {
					c.Probes = append(c.Probes, probe.s.Tokens[len(probe.s.Tokens)-1])
					break
				}
			}
		}
		begin := time.Now()
		if err := cfg.Crash.Crash(r.ctx); err != nil {
			return out, fmt.Errorf("crash round %d: %w", i+1, err)
		}
		// Recorded once the server is gone for sure: a statement sent before and answered was
		// answered by it (a backend may still commit and answer while its postmaster is being
		// killed), and it answers nothing later.
		r.rec.Fault(FaultCrash, CrashTarget)
		// The chaos goroutine's turn in flight ends on the dead server; no other starts until
		// the admin connection is back. So the locker's transaction, cut by the crash, is
		// resolved before the restarted server can hand its row to anyone.
		r.chaosTurn.Lock()
		pc.Lost()
		err := cfg.Crash.Restart(r.ctx)
		if err == nil {
			r.rec.EndFault(FaultCrash, CrashTarget) // the page shades the server's downtime
			r.rec.Fault(FaultRestart, CrashTarget)
			err = r.in.ReconnectAdmin(r.ctx)
		}
		r.chaosTurn.Unlock()
		if err != nil {
			return out, fmt.Errorf("crash round %d: %w", i+1, err)
		}
		c.Down = time.Since(begin)
		last, opsAtRestart = time.Now(), r.rec.Len()
		// Every job, at once: what the crash must not have undone.
		pc.Do(r.ctx, &Flight{Stmt: program.SnapshotStmt{Known: r.knownIDs()}})
		for _, t := range c.Probes {
			if t.Until.To != model.Never && t.Until.To-r.rec.DB.Estimate() < watchWithin {
				r.watchLease(pc, t)
			}
		}
		out = append(out, c)
	}
	// Traffic on the restarted server: afterRestart, and at least afterRestartOps operations
	// (a loaded machine may take a while to reconnect everyone), within reason.
	minEnd, maxEnd := last.Add(afterRestart), last.Add(10*time.Second)
	for r.sleepUntil(time.Now().Add(10 * time.Millisecond)) {
		if now := time.Now(); now.After(maxEnd) || now.After(minEnd) && r.rec.Len()-opsAtRestart >= afterRestartOps {
			break
		}
	}
	pc.Close()
	return out, nil
}

// watchLease observes job t around the end of its lease, on the database clock's best guess.
func (r *run) watchLease(pc *Client, t program.Token) {
	only := func(row model.Row) bool { return row.ID != t.ID }
	for !r.stopped() {
		now := r.rec.DB.Estimate()
		if now > t.Until.To+leaseWatch {
			return
		}
		if now >= t.Until.From-leaseWatch {
			pc.Do(r.ctx, &Flight{Stmt: program.SnapshotStmt{Known: []int64{t.ID}, Omit: only}})
			time.Sleep(leaseWatchEvery)
			continue
		}
		r.sleepUntil(time.Now().Add(min(t.Until.From-leaseWatch-now, 50*time.Millisecond)))
	}
}

// sleepUntil sleeps until t unless the run stops first (false then).
func (r *run) sleepUntil(t time.Time) bool {
	for time.Now().Before(t) {
		if r.stopped() {
			return false
		}
		time.Sleep(min(time.Until(t), 10*time.Millisecond))
	}
	return !r.stopped()
}

// crashChecks judges what a crash may not do, for each crash and restart in the history.
// Porcupine judges every job's history across the crash as any other; these name the crash,
// and cannot time out:
//   - an acknowledged enqueue survives: the job is there after the restart;
//   - an acknowledged completion survives: a job done before the crash (its completion
//     returned 1, or a snapshot saw it done) is done after the restart, is not claimed again
//     and accepts no completion again;
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
func crashChecks(h *History) []*model.Violation {
	var crashes []int64
	for _, f := range h.Faults {
		if f.Kind == FaultCrash {
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
func acrossCrash(h *History, crash int64) []*model.Violation {
	type fact struct {
		what string
		op   Op
	}
	existed := map[int64]bool{} // jobs whose enqueue was acknowledged
	done := map[int64]fact{}    // job -> what showed it done
	gen := map[int64]fact{}     // job -> the highest generation acknowledged
	claims := map[int64][]Op{}  // timed claims acknowledged before the crash, per job
	writes := map[int64][]Op{}  // claims naming the job, completions, expiries: anything that may change it
	for _, o := range h.Ops {
		in, out := o.Input, o.Output
		if id, ok := model.JobOf(in, out); ok && out.Outcome != model.NotSent && out.Outcome != model.Aborted &&
			(in.Kind == model.OpClaim || in.Kind == model.OpComplete || in.Kind == model.OpExpire) {
			writes[id] = append(writes[id], o)
		}
		// Sent before the crash and answered: only the killed server can have answered it,
		// whenever the client got round to reading the answer.
		if o.Call >= crash || out.Outcome != model.Returned {
			continue
		}
		switch {
		case in.Kind == model.OpEnqueue:
			existed[out.Job] = true
		case in.Kind == model.OpComplete && out.Rows == 1:
			done[in.Job] = fact{fmt.Sprintf("completion of generation %d returned 1", in.Gen), o}
		case in.Kind == model.OpObserve && out.Found && out.State == model.Done:
			if _, ok := done[in.Job]; !ok {
				done[in.Job] = fact{"a snapshot saw it done", o}
			}
		}
		var g int64
		switch {
		case in.Kind == model.OpClaim && out.Found:
			g = out.Gen
			if in.Lease > 0 {
				claims[out.Job] = append(claims[out.Job], o)
			}
		case in.Kind == model.OpObserve && out.Found:
			g = out.Gen
		}
		if id, ok := model.JobOf(in, out); ok && g > gen[id].op.Output.Gen {
			gen[id] = fact{model.DescribeOp(in, out), o}
		}
	}
	var out []*model.Violation
	for _, o := range h.Ops {
		in, res := o.Input, o.Output
		if o.Call <= crash || res.Outcome != model.Returned {
			continue
		}
		id, ok := model.JobOf(in, res)
		if !ok {
			continue
		}
		d, wasDone := done[id]
		g, hadGen := gen[id]
		switch {
		case in.Kind == model.OpObserve && !res.Found && (existed[id] || wasDone || hadGen):
			out = append(out, model.Violate(model.PRecovery, "job %d existed before the crash (its enqueue was acknowledged, or a claim or snapshot saw it) and is missing after the restart", id))
		case in.Kind == model.OpObserve && wasDone && res.State != model.Done:
			out = append(out, model.Violate(model.PDoneOnce, "job %d was done before the crash (%s, by %s) and is %s after the restart: an acknowledged completion was lost", id, d.what, d.op.Session, res.State))
		case in.Kind == model.OpClaim && wasDone:
			out = append(out, model.Violate(model.PDoneOnce, "job %d was done before the crash (%s, by %s), and a claim after the restart returned it: an acknowledged completion was lost", id, d.what, d.op.Session))
		case in.Kind == model.OpComplete && res.Rows == 1 && wasDone:
			out = append(out, model.Violate(model.PDoneOnce, "job %d was done before the crash (%s, by %s), and a completion after the restart was accepted again", id, d.what, d.op.Session))
		}
		switch {
		case !hadGen:
		case in.Kind == model.OpObserve && res.Found && res.Gen < g.op.Output.Gen:
			out = append(out, model.Violate(model.PGenerations, "job %d was at generation %d before the crash (%s, by %s) and at generation %d after the restart: a generation went back", id, g.op.Output.Gen, g.what, g.op.Session, res.Gen))
		case in.Kind == model.OpClaim && res.Found && res.Gen <= g.op.Output.Gen:
			out = append(out, model.Violate(model.PGenerations, "job %d was at generation %d before the crash (%s, by %s), and a claim after the restart returned generation %d: a generation was reused", id, g.op.Output.Gen, g.what, g.op.Session, res.Gen))
		}
		if in.Kind == model.OpObserve && res.Found && res.State == model.Running {
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
func leaseAcross(c, o Op, writes []Op) *model.Violation {
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

// crashStressConfig is what a crash round needs on top of a stress run's defaults.
func (c StressConfig) crashDefaults() StressConfig {
	if c.Crash != nil && c.Crashes <= 0 {
		c.Crashes = 1
	}
	return c
}

func crashSummary(cs []Crash) string {
	var worst time.Duration
	for _, c := range cs {
		worst = max(worst, c.Down)
	}
	return fmt.Sprintf("%d crash-restart rounds (longest down %v)", len(cs), worst.Round(time.Millisecond))
}
