// Package campaign hunts a queue for violations for a while and reports what it found: the
// modes (sequential, stress, scheduled, or each in turn), rounds and their seeds, the tally of
// what ran, the cases it saves for `go test` and `pgqcheck replay`, the report and its merge,
// the claim-cost measurement, and the mutant kill table. cmd/pgqcheck wires it to flags and
// signals; tests run it in-process.
package campaign

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/plan"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Config is one campaign.
type Config struct {
	Server   *pgserver.Server
	Queue    *sut.Queue
	Mode     Mode
	Workers  int
	Seed     uint64
	Duration time.Duration
	// KeepGoing keeps searching after a violation (one kept case per property).
	KeepGoing bool
	// ShrinkTime is what rapid may spend shrinking a failure.
	ShrinkTime time.Duration
	// PlanSizes are the done-row counts at which the claim's cost (property 10) is measured
	// after the campaign; none: not measured.
	PlanSizes []int
	// Root is the module root under whose testdata/ failing cases are saved, and whose saved
	// programs are replayed first; "" saves and replays nothing.
	Root string
	// ReportDir is where concurrent failures' report folders go; "" means a temporary folder,
	// removed when the campaign ends.
	ReportDir string
	// Log receives the campaign's lines (start, findings); Progress, the progress line.
	Log, Progress io.Writer
	// TTY: Progress is a terminal, so the progress line is rewritten in place.
	TTY bool
	// Crash: each stress round crashes and restarts Server once (see crash.go).
	Crash bool
	// Dest: the sequential modes' workers call a destination of this mode with each job's
	// external effect (effectdest; "": none).
	Dest effectdest.Mode
}

type campaign struct {
	cfg       Config
	saver     *Saver
	tally     Tally
	crashes   *CrashTally // nil unless Config.Crash
	clearLine string      // erases the progress line before a message, on a terminal

	mu       sync.Mutex
	failures []*Failure
	harness  []string
	byProp   map[model.Property]bool
	reason   string
	start    time.Time
}

// Run runs a campaign until the duration is up, a violation is found (unless KeepGoing), soft
// is cancelled (stop after the current round) or hard is (abandon it), and returns the report.
// A non-nil error without a report means nothing ran: the environment failed first.
func Run(soft, hard context.Context, cfg Config) (*Report, error) {
	cp := &campaign{cfg: cfg, saver: &Saver{Root: cfg.Root, Reports: cfg.ReportDir}, byProp: map[model.Property]bool{}}
	if err := checkCrash(cfg); err != nil {
		return nil, err
	}
	if cfg.Crash {
		cp.crashes = &CrashTally{}
	}
	if cp.cfg.Log == nil {
		cp.cfg.Log = io.Discard
	}
	if cp.cfg.Progress == nil {
		cp.cfg.Progress = io.Discard
	}
	if cfg.ReportDir == "" {
		dir, err := os.MkdirTemp("", "pgqcheck-campaign-")
		if err != nil {
			return nil, fmt.Errorf("creating a temporary report folder: %v; check TMPDIR", PathCause(err))
		}
		defer os.RemoveAll(dir)
		cp.saver.Reports = dir
	}
	fmt.Fprintf(cp.cfg.Log, "run: queue %s, mode %s, %d worker(s), seed %d, for %s\n", cfg.Queue.Source, cfg.Mode.Name(), cfg.Workers, cfg.Seed, cfg.Duration)

	// Setup finishes even when the first Ctrl-C comes during it: the campaign then runs no
	// round and still reports (interrupted, nothing checked); only the second abandons it.
	setupStart := time.Now()
	workers, cleanup, err := cp.startWorkers(hard)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cp.cfg.Log, "run: %d database(s) ready in %s; searching\n", len(workers), Round(time.Since(setupStart)))
	cp.start = time.Now()
	stop, stopAll := context.WithTimeout(soft, cfg.Duration)
	defer stopAll()

	fs, err := replaySaved(hard, workers[0].w.In, cp.saver)
	if len(fs) > 0 {
		fmt.Fprintf(cp.cfg.Log, "run: %d saved case(s) still fail\n", len(fs))
	}
	if cp.record(fs, err) && !cfg.KeepGoing {
		stopAll()
	}

	if cfg.TTY {
		cp.clearLine = "\r\033[K"
	}
	progressDone := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		cp.progress(progressDone)
	}()

	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; stop.Err() == nil; n++ {
				fs, err := w.h.Round(hard, n)
				if hard.Err() != nil {
					return
				}
				if cp.record(fs, err) && (!cfg.KeepGoing || err != nil) {
					stopAll()
				}
			}
		}()
	}
	wg.Wait()
	close(progressDone)
	pwg.Wait()

	rep := cp.report()
	if len(cfg.PlanSizes) > 0 && soft.Err() == nil {
		rep.setClaimCost(cp.measureClaimCost(hard))
	}
	switch {
	case hard.Err() != nil:
		rep.StopReason, rep.Interrupted = "interrupted; the round in progress was abandoned", true
	case soft.Err() != nil:
		rep.StopReason, rep.Interrupted = "interrupted; stopped after the current round", true
	case cp.reason != "":
		rep.StopReason = cp.reason
	default:
		rep.StopReason = "duration reached"
	}
	return rep, nil
}

type worker struct {
	w *Worker
	h Hunter
}

// startWorkers gives each worker a database, the installed queue and a hunter. cleanup undoes
// whatever was set up, also after a failure part-way.
func (cp *campaign) startWorkers(ctx context.Context) ([]worker, func(), error) {
	var (
		out  []worker
		undo []func()
	)
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	for i := 0; i < max(1, cp.cfg.Workers); i++ {
		db, err := cp.cfg.Server.CreateDatabase(ctx, fmt.Sprintf("pgqcheck_run_%s_w%d", cp.cfg.Queue.Name, i))
		if err != nil {
			return nil, cleanup, err
		}
		undo = append(undo, func() { _ = db.Drop(context.Background()) })
		in, err := sut.Install(ctx, db.DSN, cp.cfg.Queue)
		if err != nil {
			return nil, cleanup, err
		}
		undo = append(undo, in.Close)
		w := &Worker{Index: i, Queue: cp.cfg.Queue, In: in, Seed: cp.cfg.Seed, ShrinkTime: cp.cfg.ShrinkTime, Tally: &cp.tally, Saver: cp.saver, Dest: cp.cfg.Dest}
		if cp.crashes != nil {
			w.Crash, w.Crashes = cp.cfg.Server, cp.crashes
		}
		h, err := cp.cfg.Mode.Start(ctx, w)
		if err != nil {
			return nil, cleanup, err
		}
		undo = append(undo, h.Close)
		out = append(out, worker{w, h})
	}
	return out, cleanup, nil
}

// record adds a round's findings and reports whether the campaign should stop.
func (cp *campaign) record(fs []*Failure, err error) bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	stop := false
	for _, f := range fs {
		at := f.foundAt
		if at.IsZero() {
			at = time.Now()
		}
		f.FoundAfterS = max(0, at.Sub(cp.start).Seconds())
		if cp.cfg.KeepGoing && cp.byProp[f.Property] && !f.Known {
			// One kept case per property is enough to act on; more would only repeat it.
			for _, file := range []string{f.ProgramFile, f.FuzzFile, f.ReplayFile} {
				if file != "" {
					os.Remove(file)
				}
			}
			continue
		}
		cp.byProp[f.Property] = true
		cp.failures = append(cp.failures, f)
		fmt.Fprintf(cp.cfg.Progress, "%spgqcheck: worker %d found a violation: %s\n", cp.clearLine, f.Worker, f.Verdict)
		if cp.reason == "" {
			cp.reason = "violation found"
		}
		stop = true
	}
	if err != nil {
		cp.harness = append(cp.harness, textfmt.OneLine(err.Error()))
		if cp.reason == "" || cp.reason == "violation found" {
			cp.reason = "harness error"
		}
		stop = true
	}
	return stop
}

func (cp *campaign) report() *Report {
	t := cp.tally.Snapshot()
	elapsed := time.Since(cp.start)
	srv, q := cp.cfg.Server, cp.cfg.Queue
	rep := &Report{
		Format:          ReportFormat,
		Tool:            "pgqcheck run",
		Started:         cp.start.UTC(),
		Finished:        time.Now().UTC(),
		ElapsedS:        elapsed.Seconds(),
		Requested:       cp.cfg.Duration.String(),
		Backend:         string(srv.Backend),
		ServerVersion:   srv.Version,
		Where:           srv.Where,
		Queue:           QueueInfo{Name: q.Name, Source: q.Source, Dir: q.Dir(), Order: string(q.Order), Shape: q.Shape()},
		Mode:            cp.cfg.Mode.Name(),
		Workers:         max(1, cp.cfg.Workers),
		Seed:            cp.cfg.Seed,
		ReplayRoot:      cp.cfg.Root,
		Checks:          t.Checks,
		Ops:             t.Ops,
		Histories:       t.Histories,
		ShrinkRuns:      t.ShrinkRuns,
		Counts:          t.Counts,
		Failures:        cp.failures,
		HarnessErrors:   cp.harness,
		Stress:          cp.tally.latestStress(),
		NotPromisedEach: cp.tally.notPromisedEach(),
	}
	for _, f := range rep.NotPromisedEach {
		f.FoundAfterS = max(0, f.foundAt.Sub(cp.start).Seconds())
	}
	if len(rep.NotPromisedEach) > 0 {
		rep.NotPromised = rep.NotPromisedEach[0]
	}
	if cp.crashes != nil {
		rep.Crashes = cp.crashes.snapshot()
	}
	if s := elapsed.Seconds(); s > 0 {
		rep.ChecksPerS = float64(t.Checks) / s
		rep.OpsPerS = float64(t.Ops) / s
	}
	if rep.Failures == nil {
		rep.Failures = []*Failure{}
	}
	rep.Dest = cp.cfg.Dest
	checked := cp.cfg.Mode.Properties()
	if rep.Dest != "" && t.Counts.Calls > 0 {
		checked = append(checked, model.PExternal)
	}
	rep.fillProperties(checked)
	rep.decideVerdict()
	return rep
}

// measureClaimCost measures property 10 in a database of its own: the claim under EXPLAIN
// (ANALYZE, BUFFERS), rolled back, at each size of done rows.
func (cp *campaign) measureClaimCost(ctx context.Context) *plan.Report {
	q := cp.cfg.Queue
	fmt.Fprintf(cp.cfg.Progress, "pgqcheck: measuring the claim's cost at %v done rows\n", cp.cfg.PlanSizes)
	fail := func(err error) *plan.Report {
		return &plan.Report{Queue: q.Name, Source: q.Source, Verdict: "not measured: " + textfmt.OneLine(err.Error())}
	}
	var r *plan.Report
	err := OnDatabase(ctx, cp.cfg.Server, "pgqcheck_plan_"+q.Name, q, func(in *sut.Installed, _ string) (err error) {
		r, err = plan.Measure(ctx, in, cp.cfg.PlanSizes)
		return err
	})
	if err != nil {
		return fail(err)
	}
	return r
}

// progress prints the campaign's state: a line rewritten in place on a terminal, a plain line
// every few seconds otherwise (logs, CI).
func (cp *campaign) progress(done <-chan struct{}) {
	w := cp.cfg.Progress
	every := 10 * time.Second
	if cp.cfg.TTY {
		every = 250 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	line := func() string {
		t := cp.tally.Snapshot()
		el := time.Since(cp.start)
		cp.mu.Lock()
		nf := len(cp.failures)
		cp.mu.Unlock()
		s := fmt.Sprintf("pgqcheck: %s/%s  checks %s  ops %s (%.0f/s)  histories %s  failures %d",
			el.Round(time.Second), cp.cfg.Duration, num(t.Checks), num(t.Ops), float64(t.Ops)/max(el.Seconds(), 1e-3), num(t.Histories), nf)
		if t.Shrinking > 0 {
			s += "  (shrinking a failure)"
		}
		return s
	}
	for {
		select {
		case <-done:
			if cp.cfg.TTY {
				fmt.Fprintf(w, "\r\033[K%s\n", line())
			}
			return
		case <-tick.C:
			if cp.cfg.TTY {
				fmt.Fprintf(w, "\r\033[K%s", line())
			} else {
				fmt.Fprintln(w, line())
			}
		}
	}
}
