package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"pgregory.net/rapid"

	"pgqcheck/linear"
	"pgqcheck/model"
)

func init() { registerMode(scheduled{}) }

// scheduled is the linear package's deterministic concurrent mode: rapid draws a sequential
// prefix, two or three concurrent suffixes and the interleaving, so a failure replays and
// shrinks. Its fail files are TestLinearScheduled's, which `go test` replays; the shrunk run's
// choices are also kept as a FuzzScheduled corpus entry, which `go test ./fuzz` replays.
type scheduled struct{}

func (scheduled) Name() string { return "scheduled" }

func (scheduled) Properties() []model.Property {
	return []model.Property{model.PFencing, model.PExclusion, model.PGenerations, model.PDoneOnce, model.PSkipLocked,
		model.PRecovery, model.PLinearizable, model.PNoErrors}
}

func (scheduled) Start(ctx context.Context, w *Worker) (Hunter, error) {
	// A failing run's report folder (history, the failing job's timeline, verdict) goes next to
	// the campaign's report, one folder per worker: each failing run rewrites it, so what is
	// left is the shrunk failure's.
	dir := w.Saver.Scratch
	if w.Saver.Keep && w.Saver.Reports != "" {
		dir = filepath.Join(w.Saver.Reports, "scheduled")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %v", dir, unwrapPath(err))
		}
	}
	cfg := linear.ScheduledConfig{Name: fmt.Sprintf("%s-w%d", w.Queue.Name, w.Index), ReportDir: dir}
	return &schedHunter{w: w, s: linear.NewScheduler(ctx, w.In, cfg), cfg: cfg, test: "TestLinearScheduled/" + subtestName(w.Queue.Name)}, nil
}

type schedHunter struct {
	w    *Worker
	s    *linear.Scheduler
	cfg  linear.ScheduledConfig
	test string
}

func (h *schedHunter) Close() { h.s.Close() }

func (h *schedHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	res := searchProperty(h.test, roundSeed(h.w.Seed, h.w.Index, n), h.w.Tally, func(t *rapid.T, _ func() bool) {
		h.s.Property(t)
	})
	h.w.Tally.AddHistories(int64(res.Checks))
	if !res.Failed {
		return nil, nil
	}
	if ctx.Err() != nil {
		h.w.Saver.discard(res.FailFile)
		return nil, ctx.Err()
	}
	f := &Failure{Mode: "scheduled", Worker: h.w.Index, Round: n, Seed: res.Seed, Verdict: res.Verdict(), Output: res.Output,
		ShrinkS: (res.Elapsed - res.FirstFailure).Seconds()}
	f.classify()
	if f.Property < 0 {
		h.w.Saver.discard(res.FailFile)
		return nil, fmt.Errorf("%s", f.Verdict)
	}
	began := time.Now()
	data := h.shrink(ctx, f)
	f.ShrinkS += time.Since(began).Seconds()
	if h.w.Saver.Keep {
		f.ReportDir = h.s.LastReport()
	}
	if err := h.w.Saver.keep(f, res.FailFile, h.test, h.w.Queue); err != nil {
		return []*Failure{f}, err
	}
	return []*Failure{f}, h.w.Saver.keepFuzzInput(f, data, h.w.Queue)
}

// shrink takes rapid's shrunk failure further (linear.ShrinkInput), and when the smaller run
// still breaks the same property makes it the failure shown, kept as a fuzz input, and left in
// the report folder. It returns the failing run's choices.
func (h *schedHunter) shrink(ctx context.Context, f *Failure) []byte {
	data := h.s.LastFailure()
	if len(data) == 0 {
		return data
	}
	small := linear.ShrinkInput(ctx, h.w.In, h.test, h.cfg, data)
	if small == nil {
		return data
	}
	g := &Failure{Verdict: small.Verdict()}
	g.classify()
	if g.Property != f.Property {
		return data
	}
	f.Verdict, f.Output = small.Verdict(), small.Output
	return small.Input
}
