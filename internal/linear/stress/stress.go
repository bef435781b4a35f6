package stress

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/external"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Run runs free-running traffic against an installed queue: workers on their own
// connections claim, pause, complete and crash; an enqueuer adds jobs; a chaos goroutine
// expires leases, holds row locks open, cancels statements and terminates backends. It stops
// by itself after cfg.Duration or cfg.MaxOps operations, expires every lease, drains the
// queue, and checks the whole history (linearizability per job, and total-queue accounting).
// The queue is reset first. Every session it opens is closed before it returns.
//
// An error means the harness could not run (no connection, a failed reset); a violation is a
// failed Verdict, with a report folder written under cfg.ReportDir.
func Run(ctx context.Context, in *sut.Installed, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := in.Reset(ctx); err != nil {
		return nil, err
	}
	r := &run{ctx: ctx, in: in, cfg: cfg, rec: history.NewRecorder(false), claimed: map[int64]bool{}, halt: make(chan struct{})}
	defer r.closeAll()
	if err := r.dialActors(); err != nil {
		return nil, err
	}
	res := &Result{Seed: cfg.Seed}
	if err := r.traffic(res); err != nil {
		return nil, err
	}
	if err := r.drain(); err != nil {
		return nil, err
	}
	r.judge(res)
	return res, r.writeReport(res)
}

// dial connects a recording client straight to Postgres (p nil) or through p. No
// lock_timeout: a completion may wait for a held lock. The statement timeout only keeps a
// hung statement from hanging the suite.
func (r *run) dial(name string, p *faultproxy.Proxy) (*record.Client, error) {
	c, err := record.DialVia(r.ctx, r.in, name, r.rec, sut.SessionOptions{StatementTimeout: 30 * time.Second}, p)
	if err == nil {
		r.clients = append(r.clients, c)
	}
	return c, err
}

// closeAll closes the fault proxy and every session the run opened.
func (r *run) closeAll() {
	if r.proxy != nil {
		r.proxy.Close()
	}
	for _, c := range r.clients {
		c.Close()
	}
}

// dialActors connects the workers (through the fault proxy, unless the run has no chaos or
// no proxy), the enqueuer, the chaos goroutine's clients and the rescuer, each actor with a
// random source of its own drawn from the run's seed.
func (r *run) dialActors() error {
	cfg, q := r.cfg, r.in.Queue
	if !cfg.NoChaos && !cfg.NoProxy {
		p, err := faultproxy.New()
		if err != nil {
			return err
		}
		r.proxy = p
	}
	seed := rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)
	rngFor := func() *rand.Rand { return rand.New(rand.NewPCG(seed.Uint64(), seed.Uint64())) }
	for i := 0; i < cfg.Workers; i++ {
		c, err := r.dial(fmt.Sprintf("w%d", i), r.proxy)
		if err != nil {
			return err
		}
		w := &worker{actor: newActor(c, q), rng: rngFor()}
		w.halt, w.world.Dest = r.halt, cfg.Dest
		r.workers = append(r.workers, w)
	}
	enq, err := r.dial("enqueuer", nil)
	if err != nil {
		return err
	}
	r.enqueuer = newActor(enq, q)
	if !cfg.NoChaos {
		if r.chaos, err = r.dialChaos(rngFor()); err != nil {
			return err
		}
	}
	if q.Can().Rescue {
		c, err := r.dial("rescuer", nil)
		if err != nil {
			return err
		}
		r.rescuer = &rescuer{actor: newActor(c, q), rng: rngFor()}
	}
	// Drawn last, so that a seed draws for the others what it drew before the enqueuer drew.
	r.enqRng = rngFor()
	return nil
}

// dialChaos connects the chaos goroutine's clients: its expiries', its reader's, and its
// locker's on a queue that can lock a row.
func (r *run) dialChaos(rng *rand.Rand) (*chaos, error) {
	ch := &chaos{r: r, rng: rng}
	c, err := r.dial("chaos", nil)
	if err != nil {
		return nil, err
	}
	ch.expirer = newActor(c, r.in.Queue)
	if ch.reader, err = r.dial("reader", nil); err != nil {
		return nil, err
	}
	if r.in.Queue.Can().Lock {
		l, err := r.dial("locker", nil)
		if err != nil {
			return nil, err
		}
		ch.locker = newActor(l, r.in.Queue)
	}
	return ch, nil
}

// traffic runs every actor, and the crash rounds when the run crashes its server, until the
// run's time or operations are up, and waits for them all to stop.
func (r *run) traffic(res *Result) error {
	cfg := r.cfg
	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() { defer wg.Done(); r.work(w) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.enqueue(r.enqueuer) }()
	if r.chaos != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.chaos.loop() }()
	}
	if r.rescuer != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.rescue(r.rescuer) }()
	}
	var crashErr error
	if cfg.Crash != nil {
		res.Crashes, crashErr = r.crashRounds(start)
	}
	for deadline := start.Add(cfg.Duration); crashErr == nil && time.Now().Before(deadline) && r.rec.Len() < cfg.MaxOps && r.ctx.Err() == nil; {
		time.Sleep(10 * time.Millisecond)
	}
	r.stop.Store(true)
	close(r.halt)
	wg.Wait()
	res.Traffic = time.Since(start)
	if err := r.ctx.Err(); err != nil {
		return err
	}
	return crashErr
}

// drain ends every session, then, on a session of its own, expires every lease and claims and
// completes until the queue is empty (program.Drain).
func (r *run) drain() error {
	ctx := r.ctx
	// Every other session is closed before the drain, so no row lock can be held while it
	// runs: its empty claim is strict.
	for _, c := range r.clients {
		c.End(ctx)
	}
	drainer, err := r.dial(history.DrainSession, nil)
	if err != nil {
		return err
	}
	d := newActor(drainer, r.in.Queue)
	ids, err := r.tableIDs(ctx, drainer)
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	d.world.Jobs, d.world.Lease, d.strict = ids, r.cfg.Lease, true
	// The drain waits for the last job the traffic scheduled (a run-at delay, a backoff).
	d.world.DueBy = r.enqueuer.world.DueBy
	for _, w := range r.workers {
		d.world.DueBy = max(d.world.DueBy, w.world.DueBy)
	}
	if err := (program.Drain{S: drainer.Name}).Run(ctx, d); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	// The business table, read once every job has ended: one effect per committed completion
	// with it (property 16), which the history then judges.
	if count := (lifecycle.CountEffects{S: drainer.Name}); count.Applicable(d.world) {
		if _, err := d.Do(ctx, count); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
	}
	return nil
}

// judge takes the run's history, counts it and checks it.
func (r *run) judge(res *Result) {
	cfg := r.cfg
	h := r.rec.History(r.in.Queue.Source, "stress")
	h.Shape = r.in.Queue.Shape()
	h.Drained = true
	h.Program = fmt.Sprintf("stress seed %d, %d workers, %v", cfg.Seed, cfg.Workers, cfg.Duration)
	res.History = h
	res.Counts = check.CountOps(h)
	for _, w := range r.workers {
		res.Counts.RealPauses += int64(w.pauses)
		res.Counts.PausedMillis += w.slept.Milliseconds()
		res.Counts.TxnClaims += int64(w.txnClaims)
		res.Counts.Calls += int64(w.calls)
		res.Counts.Retries += int64(w.callRetries)
	}
	t0 := time.Now()
	res.Verdict = check.Check(h, cfg.CheckTimeout)
	if res.Verdict.Inconclusive {
		// The check ran out of time, which says nothing of the queue: on a loaded machine it
		// gets a fraction of a core. The history is fixed, so it is checked again, once, with
		// four times as long.
		res.Verdict = check.Check(h, 4*cfg.CheckTimeout)
		res.Rechecked = true
	}
	res.CheckTime = time.Since(t0)
	r.judgeDest(res, h)
	res.Counts.NotPromised = int64(len(res.Verdict.NotPromised))
	res.Measures = report.Measures(h)
}

// judgeDest judges what the run's destination holds after the drain against each job's last
// observation (property 17): duplicates at one that does not fence are counted, not promised.
func (r *run) judgeDest(res *Result, h *history.History) {
	if r.cfg.Dest == "" {
		return
	}
	d, err := effectdest.Read(r.ctx, r.cfg.Dest)
	if err != nil {
		res.Verdict.OK = false
		res.Verdict.Problems = append(res.Verdict.Problems, "harness: reading the destination: "+err.Error())
		return
	}
	res.Dest = d
	final := map[int64]history.Op{}
	for _, o := range h.Ops {
		if o.Input.Kind == model.OpObserve && o.Output.Outcome == model.Returned {
			if p, ok := final[o.Input.Job]; !ok || o.Call >= p.Call {
				final[o.Input.Job] = o
			}
		}
	}
	for _, c := range d.Jobs {
		res.Counts.Duplicates += int64(c.Duplicates())
	}
	res.Verdict.NotPromised = append(res.Verdict.NotPromised, external.Duplicates(d)...)
	err = external.CheckDone(d, func(id int64) bool {
		o, ok := final[id]
		return ok && o.Output.Found && o.Output.State == model.Done
	})
	var v *model.Violation
	if errors.As(err, &v) {
		res.Verdict.OK = false
		res.Verdict.Problems = append(res.Verdict.Problems, v.Error())
		if res.Verdict.Violation == nil {
			res.Verdict.Violation = v
		}
	}
}

// writeReport writes a failing run's report folder under ReportDir, or a passing run's into
// PassDir when it is set.
func (r *run) writeReport(res *Result) error {
	cfg := r.cfg
	var dir string
	var err error
	switch {
	case !res.Verdict.OK:
		dir, err = report.NewDir(cfg.ReportDir, "stress-"+r.in.Queue.Name)
	case cfg.PassDir != "":
		dir = cfg.PassDir
		if err = os.RemoveAll(dir); err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
	default:
		return nil
	}
	if err == nil {
		err = report.Write(dir, res.History, res.Verdict)
	}
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	res.ReportDir = dir
	return nil
}
