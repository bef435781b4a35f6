package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"pgqcheck/linear"
	"pgqcheck/model"
	"pgqcheck/program"
)

func init() { registerMode(stress{}) }

// stress is the linear package's free-running mode: concurrent workers, an enqueuer and injected
// faults, then a drain, with the whole history checked for linearizability (property 7) and
// total-queue accounting. Each round is one such run.
type stress struct{}

func (stress) Name() string { return "stress" }

func (stress) Properties() []model.Property {
	return []model.Property{model.PFencing, model.PExclusion, model.PGenerations, model.PDoneOnce, model.PSkipLocked,
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
	h.w.Tally.AddCounts(Counts{Counts: program.Counts{Enqueued: int64(c.Jobs), Claims: int64(c.Claims - c.EmptyClaims), EmptyClaims: int64(c.EmptyClaims),
		Completions: int64(c.Accepted), RejectedCompletions: int64(c.Refused), Expiries: int64(c.Expiries),
		Locks: int64(c.Locks), Cancels: int64(c.Cancels), Terminates: int64(c.Terminations)}, ClaimWaits: int64(c.ClaimWaits)})
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
		f.ReportDir = res.ReportDir
		return []*Failure{f}, h.keepHistory(f, res)
	}
	return []*Failure{f}, nil
}

// keepHistory saves the failing job's history (the whole one when no single job is to blame)
// under testdata/histories, marked with the property it breaks, where TestLinearHistories
// re-checks it on every go test.
func (h *stressHunter) keepHistory(f *Failure, res *linear.Result) error {
	src := filepath.Join(res.ReportDir, linear.ReportJob)
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join(res.ReportDir, linear.ReportHistory)
	}
	hist, err := linear.Load(src)
	if err != nil {
		return fmt.Errorf("reading the failing history: %v", err)
	}
	hist.Expect = fmt.Sprintf("property %d", res.Verdict.Violation.Property)
	name := "found-" + linear.SafeName(h.w.Queue.Name) + "-stress-" + time.Now().UTC().Format("20060102T150405")
	dst := filepath.Join(h.w.Saver.Root, "testdata", "histories", name+".json")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("saving the history: %v", unwrapPath(err))
	}
	if err := hist.Save(dst); err != nil {
		return fmt.Errorf("saving the history as %s: %v", dst, unwrapPath(err))
	}
	f.ReplayFile = dst
	f.ReplayCommand = "cd " + shellQuote(h.w.Saver.Root) + " && go test -count=1 -run '^TestLinearHistories$/^" + regexpQuote(name) + "$' .   (timeline: pgqcheck check-history " + shellQuote(dst) + " -html t.html)"
	return nil
}
