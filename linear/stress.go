package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"pgqcheck/faultproxy"
	"pgqcheck/linear/check"
	"pgqcheck/linear/history"
	"pgqcheck/linear/record"
	"pgqcheck/linear/report"
	"pgqcheck/program"
	"pgqcheck/sut"
	"pgqcheck/timeline"
)

// StressConfig bounds a free-running stress run. Zero fields take the defaults.
type StressConfig struct {
	Workers  int           // sessions that claim and complete (default 3)
	Duration time.Duration // how long the traffic runs (default 2s)
	MaxOps   int           // stop the traffic once this many operations are recorded (default 200000)
	MaxJobs  int           // jobs enqueued at most (default 100000)
	Backlog  int           // ready jobs the enqueuer keeps waiting (default 8)
	// Lease is every claim's lease. It must outlive the run: the model treats leases as live
	// until an expiry ends them (default 1h).
	Lease   time.Duration
	NoChaos bool // run the traffic without faults
	// NoProxy connects the workers straight to Postgres, so the chaos goroutine injects no
	// proxy faults (dropped replies, cuts, delays, stalls); by default they go through the
	// fault proxy.
	NoProxy bool
	Seed    uint64 // seeds the traffic's choices; 0 picks one (printed in the result)
	// ReportDir is where a failing run writes its report folder (default os.TempDir()).
	ReportDir string
	// PassDir, when set, is the folder a passing run writes its report into (emptied first),
	// so that a user sees the run's shape: its measures page and history.
	PassDir string
	// CheckTimeout bounds the linearizability check (default 60s).
	CheckTimeout time.Duration
	// Crash, when set, is the server the run crashes and restarts Crashes times (default 1)
	// while the traffic runs (see crash.go). It must serve this run alone.
	Crash   Crasher
	Crashes int
}

func (c StressConfig) withDefaults() StressConfig {
	if c.Workers <= 0 {
		c.Workers = 3
	}
	if c.Duration <= 0 {
		c.Duration = 2 * time.Second
	}
	if c.MaxOps <= 0 {
		c.MaxOps = 200000
	}
	if c.MaxJobs <= 0 {
		c.MaxJobs = 100000
	}
	if c.Backlog <= 0 {
		c.Backlog = 8
	}
	if c.Lease <= 0 {
		c.Lease = time.Hour
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = time.Minute
	}
	return c.crashDefaults()
}

// Result is what a stress run did and what the checks concluded.
type Result struct {
	Seed      uint64
	Counts    program.Counts
	Verdict   *check.Verdict
	History   *history.History
	ReportDir string // the report folder: the verdict's a failure, or PassDir was set
	Measures  *timeline.Measures
	Traffic   time.Duration // how long the traffic ran (the drain and the check excluded)
	CheckTime time.Duration
	Crashes   []Crash // the crash rounds, when StressConfig.Crash was set
}

// Failed reports whether the run found a violation.
func (r *Result) Failed() bool { return r.Verdict != nil && !r.Verdict.OK }

func (r *Result) String() string {
	s := fmt.Sprintf("stress seed %d: %s in %v; %s", r.Seed, r.Counts, r.Traffic.Round(time.Millisecond), r.Verdict)
	if len(r.Crashes) > 0 {
		s += "; " + crashSummary(r.Crashes)
	}
	if r.ReportDir != "" {
		s += "\nreport: " + r.ReportDir
	}
	return s
}

// Stress runs free-running traffic against an installed queue: workers on their own
// connections claim, pause, complete and crash; an enqueuer adds jobs; a chaos goroutine
// expires leases, holds row locks open, cancels statements and terminates backends. It stops
// by itself after cfg.Duration or cfg.MaxOps operations, expires every lease, drains the
// queue, and checks the whole history (linearizability per job, and total-queue accounting).
// The queue is reset first. Every session it opens is closed before it returns.
//
// An error means the harness could not run (no connection, a failed reset); a violation is a
// failed Verdict, with a report folder written under cfg.ReportDir.
func Stress(ctx context.Context, in *sut.Installed, cfg StressConfig) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := in.Reset(ctx); err != nil {
		return nil, err
	}
	rec := history.NewRecorder(false)
	r := &run{ctx: ctx, in: in, cfg: cfg, rec: rec, claimed: map[int64]bool{}, halt: make(chan struct{})}
	res := &Result{Seed: cfg.Seed}
	var clients []*record.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var proxy *faultproxy.Proxy
	if !cfg.NoChaos && !cfg.NoProxy {
		p, err := faultproxy.New()
		if err != nil {
			return nil, err
		}
		defer p.Close()
		proxy = p
	}
	dialVia := func(name string, p *faultproxy.Proxy) (*record.Client, error) {
		// No lock_timeout: a completion may wait for a held lock. The statement timeout only
		// keeps a hung statement from hanging the suite.
		c, err := record.DialVia(ctx, in, name, rec, sut.SessionOptions{StatementTimeout: 30 * time.Second}, p)
		if err == nil {
			clients = append(clients, c)
		}
		return c, err
	}
	dial := func(name string) (*record.Client, error) { return dialVia(name, nil) }
	seed := rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)
	rngFor := func() *rand.Rand { return rand.New(rand.NewPCG(seed.Uint64(), seed.Uint64())) }
	for i := 0; i < cfg.Workers; i++ {
		c, err := dialVia(fmt.Sprintf("w%d", i), proxy)
		if err != nil {
			return nil, err
		}
		w := &worker{actor: newActor(c, in.Queue), rng: rngFor()}
		w.halt = r.halt
		r.workers = append(r.workers, w)
	}
	enq, err := dial("enqueuer")
	if err != nil {
		return nil, err
	}
	var ch *chaos
	if !cfg.NoChaos {
		ch = &chaos{r: r, rng: rngFor()}
		c, err := dial("chaos")
		if err != nil {
			return nil, err
		}
		ch.c = newActor(c, in.Queue)
		if ch.reader, err = dial("reader"); err != nil {
			return nil, err
		}
		if in.Queue.CanLock() {
			l, err := dial("locker")
			if err != nil {
				return nil, err
			}
			ch.locker = newActor(l, in.Queue)
		}
	}
	var resc *rescuer
	if in.Queue.CanRescue() {
		c, err := dial("rescuer")
		if err != nil {
			return nil, err
		}
		resc = &rescuer{actor: newActor(c, in.Queue), rng: rngFor()}
	}

	start := time.Now()
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() { defer wg.Done(); r.work(w) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); r.enqueue(newActor(enq, in.Queue)) }()
	if ch != nil {
		wg.Add(1)
		go func() { defer wg.Done(); ch.loop() }()
	}
	if resc != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.rescue(resc) }()
	}
	var crashErr error
	if cfg.Crash != nil {
		res.Crashes, crashErr = r.crashRounds(start, dial)
	}
	for deadline := start.Add(cfg.Duration); crashErr == nil && time.Now().Before(deadline) && rec.Len() < cfg.MaxOps && ctx.Err() == nil; {
		time.Sleep(10 * time.Millisecond)
	}
	r.stop.Store(true)
	close(r.halt)
	wg.Wait()
	res.Traffic = time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if crashErr != nil {
		return nil, crashErr
	}

	// Every other session is closed before the drain, so no row lock can be held while it
	// runs: its empty claim is strict.
	for _, c := range clients {
		c.End(ctx)
	}
	drainer, err := dial(history.DrainSession)
	if err != nil {
		return nil, err
	}
	d := newActor(drainer, in.Queue)
	ids, err := r.tableIDs(ctx, drainer)
	if err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	d.w.Jobs, d.w.Lease, d.strict = ids, cfg.Lease, true
	if err := (program.Drain{S: drainer.Name}).Run(ctx, d); err != nil {
		return nil, fmt.Errorf("drain: %w", err)
	}
	h := rec.History(in.Queue.Source, "stress")
	h.Shape = in.Queue.Shape()
	h.Drained = true
	h.Program = fmt.Sprintf("stress seed %d, %d workers, %v", cfg.Seed, cfg.Workers, cfg.Duration)
	res.History = h
	res.Counts = check.CountOps(h)
	for _, w := range r.workers {
		res.Counts.RealPauses += int64(w.pauses)
		res.Counts.PausedMillis += w.slept.Milliseconds()
	}
	t0 := time.Now()
	res.Verdict = check.Check(h, cfg.CheckTimeout)
	res.CheckTime = time.Since(t0)
	res.Counts.NotPromised = int64(len(res.Verdict.NotPromised))
	res.Measures = report.Measures(h)
	var dir string
	switch {
	case !res.Verdict.OK:
		dir, err = report.NewDir(cfg.ReportDir, "stress-"+in.Queue.Name)
	case cfg.PassDir != "":
		dir = cfg.PassDir
		if err = os.RemoveAll(dir); err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
	default:
		return res, nil
	}
	if err == nil {
		err = report.Write(dir, h, res.Verdict)
	}
	if err != nil {
		return res, fmt.Errorf("writing the report: %w", err)
	}
	res.ReportDir = dir
	return res, nil
}

// Throughput measures what recording costs: workers each loop enqueue, claim, complete on
// their own connections for d, with every operation recorded or with the same statements run
// bare, and it returns queue statements per second.
func Throughput(ctx context.Context, in *sut.Installed, workers int, d time.Duration, recorded bool) (float64, error) {
	return ThroughputVia(ctx, in, workers, d, recorded, nil)
}

// ThroughputVia is Throughput with every worker connected through p (nil: straight to
// Postgres), no fault armed: what the fault proxy costs.
func ThroughputVia(ctx context.Context, in *sut.Installed, workers int, d time.Duration, recorded bool, p *faultproxy.Proxy) (float64, error) {
	if err := in.Reset(ctx); err != nil {
		return 0, err
	}
	var rec *history.Recorder
	if recorded {
		rec = history.NewRecorder(false)
	}
	var clients []*record.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := 0; i < max(workers, 1); i++ {
		c, err := record.DialVia(ctx, in, fmt.Sprintf("w%d", i), rec, sut.SessionOptions{StatementTimeout: 30 * time.Second}, p)
		if err != nil {
			return 0, err
		}
		clients = append(clients, c)
	}
	var stop atomic.Bool
	var statements atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range clients {
		a := newActor(c, in.Queue)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				if a.one(ctx, program.Enqueue{S: c.Name, N: 1}).Err != nil {
					return
				}
				claim := a.one(ctx, program.Claim{S: c.Name})
				if claim.Err != nil {
					return
				}
				statements.Add(2)
				if claim.Out.Found {
					if a.one(ctx, program.Complete{S: c.Name}).Err != nil {
						return
					}
					statements.Add(1)
				}
			}
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return float64(statements.Load()) / time.Since(start).Seconds(), ctx.Err()
}
