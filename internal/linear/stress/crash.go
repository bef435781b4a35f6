package stress

import (
	"context"
	"fmt"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// Crasher is a server a stress run may crash and restart: *pgserver.Server started with
// Options.Crash is one.
type Crasher interface {
	// Crash kills the postmaster with SIGKILL and returns once the server is gone.
	Crash(ctx context.Context) error
	// Restart starts it again on the same data directory and returns once it accepts sessions.
	Restart(ctx context.Context) error
}

// CrashProbeLeases are the leases the crash probe claims just before each crash, one job each,
// and never completes: leases running across the crash. The short one ends about when the
// server comes back (a restart takes from a quarter of a second to a few seconds), and the
// probe watches its end; the long one outlives any restart, so the restarted server must
// still show it live.
var CrashProbeLeases = []time.Duration{time.Second, 30 * time.Second}

// watchWithin: the probe watches a lease's end only if it comes this soon after the restart.
const watchWithin = 2 * time.Second

// afterRestart is how long traffic goes on at least after the last restart, so that every
// crash round has traffic on the restarted server.
const (
	afterRestart    = 300 * time.Millisecond
	afterRestartOps = 200
)

// CrashRound is one crash and restart of a stress run.
type CrashRound struct {
	Down   time.Duration   // from the kill until the restarted server accepted sessions
	Probes []program.Token // the probe's claims just before the crash
}

// crashRounds crashes and restarts the server cfg.Crashes times during the traffic, evenly
// spread over cfg.Duration, while workers, enqueuer and chaos run on. Just before each crash
// the probe enqueues jobs and claims one with each of CrashProbeLeases; after each restart it
// observes every job at once, then its jobs around the ends of their leases, if soon. It
// returns once the restarted server has seen afterRestart and afterRestartOps of traffic.
func (r *run) crashRounds(start time.Time) ([]CrashRound, error) {
	cfg := r.cfg
	probeClient, err := r.dial("probe", nil)
	if err != nil {
		return nil, err
	}
	probe := newActor(probeClient, r.in.Queue)
	probe.halt = r.halt
	var out []CrashRound
	var last time.Time
	opsAtRestart := 0
	for i := 0; i < cfg.Crashes && !r.stopped() && r.rec.Len() < cfg.MaxOps; i++ {
		at := start.Add(cfg.Duration * time.Duration(i+1) / time.Duration(cfg.Crashes+1))
		if !r.sleepUntil(at) {
			break
		}
		next := start.Add(cfg.Duration * time.Duration(i+2) / time.Duration(cfg.Crashes+1))
		round := CrashRound{Probes: r.claimProbes(probe, next)}
		if round.Down, err = r.crashAndRestart(probeClient); err != nil {
			return out, fmt.Errorf("crash round %d: %w", i+1, err)
		}
		last, opsAtRestart = time.Now(), r.rec.Len()
		// Every job, at once: what the crash must not have undone.
		probeClient.Do(r.ctx, &record.Flight{Stmt: program.SnapshotStmt{Known: r.knownIDs()}})
		for _, t := range round.Probes {
			if t.Until.To != model.Never && t.Until.To-r.rec.DB.Estimate() < watchWithin {
				r.watchLease(probeClient, t)
			}
		}
		out = append(out, round)
	}
	// Traffic on the restarted server: afterRestart, and at least afterRestartOps operations
	// (a loaded machine may take a while to reconnect everyone), within reason.
	minEnd, maxEnd := last.Add(afterRestart), last.Add(10*time.Second)
	for r.sleepUntil(time.Now().Add(10 * time.Millisecond)) {
		if now := time.Now(); now.After(maxEnd) || now.After(minEnd) && r.rec.Len()-opsAtRestart >= afterRestartOps {
			break
		}
	}
	probeClient.Close()
	return out, nil
}

// claimProbes claims a job with each of CrashProbeLeases on the probe's session, and returns
// the tokens it was handed: a crash round without a probe has no lease to judge. Each claim
// follows an enqueue of a job of its own, so that it finds one even when the workers have
// emptied the queue, and no worker claims between the two (the workers took it first in 4 of
// 38 tries on a loaded machine). A claim that still finds nothing is tried again until it
// lands, the run stops, or the round's share of the run ends at until, but at least
// probeTries times: on a loaded machine the round may begin past until.
func (r *run) claimProbes(probe *actor, until time.Time) []program.Token {
	var out []program.Token
	for _, lease := range CrashProbeLeases {
		for try := 0; !r.stopped() && (try < probeTries || time.Now().Before(until)) && r.rec.Len() < r.cfg.MaxOps; try++ {
			if t, ok := r.claimProbe(probe, lease); ok {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// probeTries is how many times a probe's claim is tried however late its round began.
const probeTries = 3

func (r *run) claimProbe(probe *actor, lease time.Duration) (program.Token, bool) {
	name := probe.client.Name
	r.claimGate.Lock()
	defer r.claimGate.Unlock()
	if res := probe.one(r.ctx, program.Enqueue{S: name, N: 1}); res.Err == nil {
		r.noteEnqueued(res.Out.Job)
	}
	if res := probe.one(r.ctx, program.Claim{S: name, Lease: lease}); res.Err == nil && res.Out.Found {
		return probe.session.Tokens[len(probe.session.Tokens)-1], true
	}
	return program.Token{}, false
}

// crashAndRestart kills the server, records the crash, restarts it and reconnects the admin
// connection, and returns how long the server was down.
func (r *run) crashAndRestart(probeClient *record.Client) (time.Duration, error) {
	crasher := r.cfg.Crash
	begin := time.Now()
	if err := crasher.Crash(r.ctx); err != nil {
		return 0, err
	}
	// Recorded once the server is gone for sure: a statement sent before and answered was
	// answered by it (a backend may still commit and answer while its postmaster is being
	// killed), and it answers nothing later.
	r.rec.Fault(history.FaultCrash, history.CrashTarget)
	// The chaos goroutine's turn in flight ends on the dead server; no other starts until
	// the admin connection is back. So the locker's transaction, cut by the crash, is
	// resolved before the restarted server can hand its row to anyone.
	r.chaosTurn.Lock()
	probeClient.ConnectionLost()
	err := crasher.Restart(r.ctx)
	if err == nil {
		r.rec.EndFault(history.FaultCrash, history.CrashTarget) // the page shades the server's downtime
		r.rec.Fault(history.FaultRestart, history.CrashTarget)
		err = r.in.ReconnectAdmin(r.ctx)
	}
	r.chaosTurn.Unlock()
	if err != nil {
		return 0, err
	}
	return time.Since(begin), nil
}

// watchLease observes job t around the end of its lease, on the database clock's best guess.
func (r *run) watchLease(probeClient *record.Client, t program.Token) {
	only := func(row model.Row) bool { return row.ID != t.ID }
	for !r.stopped() {
		now := r.rec.DB.Estimate()
		if now > t.Until.To+leaseWatch {
			return
		}
		if now >= t.Until.From-leaseWatch {
			probeClient.Do(r.ctx, &record.Flight{Stmt: program.SnapshotStmt{Known: []int64{t.ID}, Omit: only}})
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

func crashSummary(cs []CrashRound) string {
	var worst time.Duration
	for _, c := range cs {
		worst = max(worst, c.Down)
	}
	return fmt.Sprintf("%d crash-restart rounds (longest down %v)", len(cs), worst.Round(time.Millisecond))
}
