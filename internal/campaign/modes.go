package campaign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/hunt"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/linear/stress"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Mode is one way of hunting for violations. A campaign gives each of its workers a database of
// its own with the queue installed, asks the mode for a Hunter there, and has it run short
// rounds until the campaign stops.
//
// "sequential" is the Prop suite's state machine; "stress" (many sessions at once, histories
// checked for linearizability) and "scheduled" (interleavings drawn by rapid) are the concurrent
// modes; a list of modes takes turns between them.
type Mode interface {
	Name() string
	// Properties lists the properties that the mode's rounds check.
	Properties() []model.Property
	// Start prepares one worker's hunter. The database is fresh and the queue installed.
	Start(ctx context.Context, w *Worker) (Hunter, error)
}

// Worker is what a hunter gets: its queue, its database, the campaign's seed, and where to
// count its work and save its findings.
type Worker struct {
	Index      int
	Queue      *sut.Queue
	In         *sut.Installed
	Seed       uint64
	ShrinkTime time.Duration // rapid's shrinking budget per failure
	// CatchOnly: only catching matters (the kill table), so a failure is not shrunk beyond
	// rapid's budget, nor its program reduced.
	CatchOnly bool
	Tally     *Tally
	Saver     *Saver
	// Crash is the server a stress round crashes and restarts (nil: none), and Crashes
	// counts those rounds.
	Crash   stress.Crasher
	Crashes *CrashTally
	// Dest is the mode of a destination for external effects that each sequential round's
	// workers call ("": none).
	Dest effectdest.Mode
}

// Hunter runs a worker's rounds.
type Hunter interface {
	// Round runs one bounded unit of search (about a second, plus shrinking when it finds
	// something) and returns the violations it found. A cancelled ctx abandons the round; its
	// results are then discarded. An error is the harness failing, not a verdict.
	Round(ctx context.Context, n int) ([]*Failure, error)
	Close()
}

// AllModes is the default campaign: every mode in turn, so one run covers what the sequential
// properties see and what only concurrency shows.
const AllModes = "all"

var modes = map[string]Mode{"sequential": sequentialMode{}, "lease-time": sequentialMode{realTime: true}, "stress": stressMode{}, "scheduled": scheduled{},
	"lock-order": lockOrderMode{}, "deploy": deployMode{}}

// ModeNames lists the modes, for flags' help.
func ModeNames() string {
	var n []string
	for k := range modes {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// LookupModes reads a mode spec: one mode, a comma-separated list, or "all".
func LookupModes(spec string) (Mode, error) {
	if spec == AllModes {
		spec = "sequential,stress,scheduled,lease-time"
	}
	var m mixed
	for _, n := range strings.Split(spec, ",") {
		one, ok := modes[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("unknown mode %q; use --mode %s, or %s", strings.TrimSpace(n), ModeNames(), AllModes)
		}
		m.modes = append(m.modes, one)
	}
	if len(m.modes) == 1 {
		return m.modes[0], nil
	}
	return m, nil
}

// roundChecks is how many property runs make a round of a rapid-driven mode: enough to
// amortise a round's setup, few enough that a stop request is honoured within a second or so.
const roundChecks = 20

// sequential is the Prop suite: rapid drives the model and the queue one operation at a time.
// With realTime ("lease-time") it also lets leases end by themselves and real time pass, as
// TestPropLeaseTime does: fewer runs a round, each may pause.
type sequentialMode struct{ realTime bool }

func (m sequentialMode) Name() string {
	if m.realTime {
		return "lease-time"
	}
	return "sequential"
}

func (sequentialMode) Properties() []model.Property {
	return verdict.SequentialProperties
}

func (m sequentialMode) Start(ctx context.Context, w *Worker) (Hunter, error) {
	e, err := hunt.NewSequential(ctx, w.In)
	if err != nil {
		return nil, err
	}
	e.RealTime = m.realTime
	if w.Dest != "" {
		if err := e.UseDest(w.Dest); err != nil {
			e.Close()
			return nil, err
		}
	}
	if w.CatchOnly {
		e.CatchOnly()
	}
	return &seqHunter{w: w, e: e, mode: m.Name()}, nil
}

type seqHunter struct {
	w    *Worker
	e    *hunt.Sequential
	mode string
}

func (h *seqHunter) Close() { h.e.Close() }

func (h *seqHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	begin := time.Now()
	seed := RoundSeed(h.w.Seed, h.w.Index, n)
	checks := roundChecks
	if h.e.RealTime {
		checks = roundChecks / 5 // a run pauses about half a second in all
	}
	// The first thing the queue is seen doing that it does not promise is kept once, reduced.
	h.e.NotPromised = func(p model.Property, _ int, reduce func() *verdict.Finding) {
		if !h.w.Tally.hasNotPromised(p) {
			at := time.Now() // found now; reducing it is not finding it
			np := reduce()
			fl := newFailure(np, string(np.Mode), 0, 0, seed)
			fl.foundAt = at
			h.w.Tally.sawNotPromised(fl)
		}
	}
	f, st, err := h.e.Search(ctx, hunt.Settings{Seed: seed, Checks: checks, ShrinkTime: h.w.ShrinkTime}, h.w.Tally)
	// The last property run may have left a locker holding a row: end it.
	defer h.e.Reset(context.Background())
	if st.Failed && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, nil
	}
	fl := newFailure(f, h.mode, h.w.Index, n, seed)
	fl.ShrinkS = (time.Since(begin) - st.FirstFailure).Seconds()
	fl.foundAt = begin.Add(st.FirstFailure)
	return []*Failure{fl}, h.w.Saver.keepProgram(fl, f, h.w.Queue)
}

// stressMode is free-running concurrent traffic with injected faults, then a drain, with the whole
// history checked for linearizability and total-queue accounting. Each round is one such run.
type stressMode struct{}

func (stressMode) Name() string { return "stress" }

func (stressMode) Properties() []model.Property {
	return verdict.ConcurrentProperties
}

// stressRound is how long a round's traffic runs; the drain and the check come on top.
const stressRound = 2 * time.Second

func (stressMode) Start(ctx context.Context, w *Worker) (Hunter, error) {
	dir := filepath.Join(w.Saver.Reports, "histories")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %v", dir, PathCause(err))
	}
	return &stressHunter{w: w, dir: dir, pass: filepath.Join(w.Saver.Reports, fmt.Sprintf("stress-latest-w%d", w.Index))}, nil
}

type stressHunter struct {
	w    *Worker
	dir  string // where failing runs' report folders go
	pass string // the latest passing round's report folder, rewritten each round
}

func (h *stressHunter) Close() {}

func (h *stressHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	begin := time.Now()
	o, err := hunt.Stress(ctx, h.w.In, RoundSeed(h.w.Seed, h.w.Index, n), stressRound, h.dir, h.pass, h.w.Crash)
	if o != nil && h.w.Crashes != nil {
		h.w.Crashes.add(o.Crashes)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if o != nil {
		h.w.Tally.AddHistories(1)
		h.w.Tally.AddOps(o.Ops)
		o.Counts.StressRounds = 1
		h.w.Tally.AddCounts(o.Counts)
		for _, np := range o.NotPromised {
			h.w.Tally.sawNotPromised(newFailure(np, "stress", h.w.Index, n, o.Seed))
		}
		if o.Measures != nil && o.ReportDir != "" {
			h.w.Tally.setStress(&StressRound{Worker: h.w.Index, Round: n, Seed: o.Seed, ReportDir: o.ReportDir,
				Page: filepath.Join(o.ReportDir, report.MeasuresFile), Measures: o.Measures})
		}
	}
	if err != nil || o.Finding == nil {
		return nil, err
	}
	fl := newFailure(o.Finding, "stress", h.w.Index, n, o.Seed)
	fl.foundAt = begin.Add(o.Traffic)
	return []*Failure{fl}, h.w.Saver.keepHistory(fl, o.Finding, h.w.Queue)
}

// scheduled is the deterministic concurrent mode: rapid draws a sequential prefix, two or three
// concurrent suffixes and the interleaving, so a failure replays and shrinks. The shrunk run's
// choices are kept as a FuzzScheduled input, which `go test ./fuzz` replays.
type scheduled struct{}

func (scheduled) Name() string { return "scheduled" }

func (scheduled) Properties() []model.Property {
	return verdict.ConcurrentProperties
}

func (scheduled) Start(ctx context.Context, w *Worker) (Hunter, error) {
	// A failing run's report folder goes next to the campaign's report, one folder per worker:
	// each failing run rewrites it, so what is left is the shrunk failure's.
	dir := filepath.Join(w.Saver.Reports, "scheduled")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %v", dir, PathCause(err))
	}
	return &schedHunter{w: w, e: hunt.NewScheduled(ctx, w.In, fmt.Sprintf("%s-w%d", w.Queue.Name, w.Index), dir)}, nil
}

type schedHunter struct {
	w *Worker
	e *hunt.Scheduled
}

func (h *schedHunter) Close() { h.e.Close() }

func (h *schedHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	begin := time.Now()
	seed := RoundSeed(h.w.Seed, h.w.Index, n)
	f, st, err := h.e.Search(ctx, hunt.Settings{Seed: seed, Checks: roundChecks, ShrinkTime: h.w.ShrinkTime}, h.w.Tally, !h.w.CatchOnly)
	if st.Failed && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil || f == nil {
		return nil, err
	}
	fl := newFailure(f, "scheduled", h.w.Index, n, seed)
	fl.ShrinkS = (time.Since(begin) - st.FirstFailure).Seconds()
	fl.foundAt = begin.Add(st.FirstFailure)
	if err := h.w.Saver.keepFuzzInput(fl, f.FuzzInput, h.w.Queue); err != nil {
		return []*Failure{fl}, err
	}
	// A scheduled finding whose engine gives it a program is kept as an .ops file as well.
	return []*Failure{fl}, h.w.Saver.keepProgram(fl, f, h.w.Queue)
}

// mixed takes turns between modes: a worker's round n is round n/k of mode n%k, all on the
// worker's one database (each round starts by emptying the queue).
type mixed struct{ modes []Mode }

func (m mixed) Name() string {
	var names []string
	for _, one := range m.modes {
		names = append(names, one.Name())
	}
	return strings.Join(names, "+")
}

func (m mixed) Properties() []model.Property {
	seen := map[model.Property]bool{}
	var out []model.Property
	for _, one := range m.modes {
		for _, p := range one.Properties() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m mixed) Start(ctx context.Context, w *Worker) (Hunter, error) {
	h := &mixedHunter{}
	for _, one := range m.modes {
		sub, err := one.Start(ctx, w)
		if err != nil {
			h.Close()
			return nil, err
		}
		h.hunters = append(h.hunters, sub)
	}
	return h, nil
}

type mixedHunter struct{ hunters []Hunter }

func (h *mixedHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	k := len(h.hunters)
	return h.hunters[n%k].Round(ctx, n/k)
}

func (h *mixedHunter) Close() {
	for _, sub := range h.hunters {
		sub.Close()
	}
}
