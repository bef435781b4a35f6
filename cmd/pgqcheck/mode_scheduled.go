package main

import (
	"context"
	"fmt"

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

func (scheduled) Properties() []int {
	return []int{model.PFencing, model.PExclusion, model.PGenerations, model.PDoneOnce, model.PSkipLocked,
		model.PRecovery, model.PLinearizable, model.PNoErrors}
}

func (scheduled) Start(ctx context.Context, w *Worker) (Hunter, error) {
	s := linear.NewScheduler(ctx, w.In, linear.ScheduledConfig{Name: w.Queue.Name, ReportDir: w.Saver.Scratch})
	return &schedHunter{w: w, s: s, test: "TestLinearScheduled/" + subtestName(w.Queue.Name)}, nil
}

type schedHunter struct {
	w    *Worker
	s    *linear.Scheduler
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
	if err := h.w.Saver.keep(f, res.FailFile, h.test, h.w.Queue); err != nil {
		return []*Failure{f}, err
	}
	return []*Failure{f}, h.w.Saver.keepFuzzInput(f, h.s.LastFailure(), h.w.Queue)
}
