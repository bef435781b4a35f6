package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"pgqcheck/linear"
	"pgqcheck/model"
)

func init() { registerMode(stress{}) }

// stress is the linear package's free-running mode: concurrent workers, an enqueuer and injected
// faults, then a drain, with the whole history checked for linearizability (property 7) and
// total-queue accounting. Each round is one such run.
type stress struct{}

func (stress) Name() string { return "stress" }

func (stress) Properties() []int {
	return []int{model.PFencing, model.PExclusion, model.PGenerations, model.PDoneOnce, model.PSkipLocked,
		model.PRecovery, model.PLinearizable, model.PNoErrors}
}

// stressRound is how long a round's traffic runs; the drain and the check come on top.
const stressRound = 2 * time.Second

func (stress) Start(ctx context.Context, w *Worker) (Hunter, error) {
	return &stressHunter{w: w}, nil
}

type stressHunter struct{ w *Worker }

func (h *stressHunter) Close() {}

func (h *stressHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	begin := time.Now()
	// A failing run's report folder (history, the failing job's timeline, verdict) goes next to
	// the campaign's report; histories kept as regressions under testdata/ are curated by hand.
	dir := h.w.Saver.Scratch
	if h.w.Saver.Keep && h.w.Saver.Reports != "" {
		dir = filepath.Join(h.w.Saver.Reports, "histories")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %v", dir, unwrapPath(err))
		}
	}
	res, err := linear.Stress(ctx, h.w.In, linear.StressConfig{
		Duration:  stressRound,
		Seed:      roundSeed(h.w.Seed, h.w.Index, n),
		ReportDir: dir,
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	c := res.Counts
	h.w.Tally.AddHistories(1)
	h.w.Tally.AddOps(int64(c.Ops))
	h.w.Tally.AddCounts(Counts{Enqueued: int64(c.Jobs), Claims: int64(c.Claims - c.EmptyClaims), EmptyClaims: int64(c.EmptyClaims),
		Completions: int64(c.Accepted), RejectedCompletions: int64(c.Refused), Expiries: int64(c.Expiries),
		Locks: int64(c.Locks), Cancels: int64(c.Cancels), Terminates: int64(c.Terminations)})
	if !res.Failed() {
		return nil, nil
	}
	v := res.Verdict
	if v.Violation == nil {
		return nil, fmt.Errorf("stress seed %d: %s", res.Seed, v.String())
	}
	f := &Failure{Mode: "stress", Worker: h.w.Index, Round: n, Seed: res.Seed, Verdict: v.Violation.Error(),
		Output: res.String() + "\n" + v.Explanation, foundAt: begin.Add(res.Traffic)}
	f.classify()
	if res.ReportDir != "" && h.w.Saver.Keep {
		f.ReplayFile = filepath.Join(res.ReportDir, linear.ReportHistory)
		f.ReplayCommand = "pgqcheck check-history " + shellQuote(f.ReplayFile) + " -html " + shellQuote(filepath.Join(res.ReportDir, "recheck.html"))
	}
	return []*Failure{f}, nil
}
