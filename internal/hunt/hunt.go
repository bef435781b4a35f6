// Package hunt is one search for a broken promise in one mode on one installed queue: the Prop
// state machine under rapid (Sequential), scheduled mode under rapid (Scheduled), a stress run
// (Stress), and the replays of saved cases and histories. Each returns its finding as a value.
// Campaigns, the kill table and replays drive them; rapid runs outside `go test` here, with each
// search's own settings.
package hunt

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/verdict"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/fuzz"
	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/linear/schedule"
	"github.com/pgqcheck/pgqcheck/internal/linear/stress"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/rapidrun"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/testflags"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/internal/timeline"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// rapid's flags are process-wide. A search sets them just before it starts and holds rapidMu
// until rapid has read them (when the property first runs), so that concurrent workers each
// search with the settings they chose. rapid reads the shrink time later, while shrinking:
// every search of one campaign uses the same.
var rapidMu sync.Mutex

// Settings are one search's rapid flags. Fail files are never written: a campaign keeps
// its own cases (.ops programs, fuzz inputs), which replay without rapid.
type Settings struct {
	Seed       uint64
	Checks     int
	ShrinkTime time.Duration
}

// FlagSettings are the search settings rapid's flags give (-rapid.seed, -rapid.checks,
// -rapid.shrinktime), read while no search holds them changed.
func FlagSettings() Settings {
	rapidMu.Lock()
	defer rapidMu.Unlock()
	value := func(name, def string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return def
	}
	seed, _ := strconv.ParseUint(value("rapid.seed", "0"), 10, 64)
	checks, _ := strconv.Atoi(value("rapid.checks", "100"))
	shrink, _ := time.ParseDuration(value("rapid.shrinktime", "30s"))
	return Settings{Seed: seed, Checks: checks, ShrinkTime: shrink}
}

// setRapid sets one of rapid's flags, which rapid registers when it is linked in.
func setRapid(name, value string) (restore func()) {
	restore, err := testflags.Set(name, value)
	if err != nil {
		panic(err)
	}
	return restore
}

// Stats is what the property wrapper counted.
type Stats struct {
	Failed       bool
	Flaky        bool          // the last run (rapid's replay of its shrunk case) passed
	Checks       int           // property runs until the first failure (all of them when it held)
	FirstFailure time.Duration // from the search's start to the end of the first failing run
	Elapsed      time.Duration
	// Output is what rapid reported: each failing run, its draws, the replays of its shrunk case.
	Output string
}

// Counter is told what a search runs while it runs, for a campaign's progress line.
type Counter interface {
	AddChecks(n int64)          // property runs completed or failed, shrinking aside
	AddHistories(n int64)       // concurrent histories checked
	AddOps(n int64)             // operations run
	AddCounts(c program.Counts) // what they exercised
	ShrinkRun()                 // a property run spent minimising a failure
	Shrinking(delta int)        // a search started (+1) or stopped (-1) minimising a failure
}

// Sum is a Counter that keeps only the sum of what its searches exercised.
type Sum struct{ program.Counts }

func (s *Sum) AddChecks(int64)            {}
func (s *Sum) AddHistories(int64)         {}
func (s *Sum) AddOps(int64)               {}
func (s *Sum) AddCounts(c program.Counts) { s.Add(c) }
func (s *Sum) ShrinkRun()                 {}
func (s *Sum) Shrinking(int)              {}

// checkRapid runs prop under rapid with settings rs, outside `go test`, and counts property
// runs, the first failing run and shrink runs itself (into st and tally), not from rapid's
// text. prop is told whether a failure has been seen (its runs from then on are shrinking).
func checkRapid(name string, rs Settings, tally Counter, prop func(t *rapid.T, failed func() bool)) (output string, st Stats) {
	var (
		start    = time.Now()
		failed   bool
		lastOK   bool
		released sync.Once
	)
	rapidMu.Lock()
	// The seed and the number of checks go back to what they were once rapid has read them,
	// so that a search leaves no seed behind for the next rapid user in the process (a test
	// that runs after a campaign's). The shrink time and the fail-file settings are read later
	// and stay.
	restore := []func(){
		setRapid("rapid.seed", strconv.FormatUint(rs.Seed, 10)),
		setRapid("rapid.checks", strconv.Itoa(max(1, rs.Checks))),
	}
	setRapid("rapid.shrinktime", rs.ShrinkTime.String())
	setRapid("rapid.nofailfile", "true")
	setRapid("rapid.failfile", "")
	release := func() {
		released.Do(func() {
			for _, r := range restore {
				r()
			}
			rapidMu.Unlock()
		})
	}

	out, fail := rapidrun.Check(name, func(t *rapid.T) {
		release()
		passed := false
		defer func() {
			lastOK = passed
			switch {
			case failed:
				tally.ShrinkRun()
			case passed:
				st.Checks++
				tally.AddChecks(1)
			default:
				failed = true
				st.Checks++
				st.FirstFailure = time.Since(start)
				tally.AddChecks(1)
				tally.Shrinking(+1)
			}
		}()
		prop(t, func() bool { return failed })
		passed = true
	})
	release()
	if failed {
		tally.Shrinking(-1)
	}
	st.Elapsed = time.Since(start)
	st.Output = out
	st.Failed = fail
	st.Flaky = fail && lastOK
	return out, st
}

// searchName is what rapid calls a campaign's search. It names no test, so rapid finds no
// fail files of its own to replay under it, whatever the working directory.
func searchName(queue string) string { return "pgqcheck-campaign-" + program.SafeName(queue) }

// ErrNotReproduced is a failure that did not fail again when its program was replayed.
var ErrNotReproduced = errors.New("a failing run did not fail again when its program was replayed (a nondeterministic queue or harness); rerun with the same --seed")

// Sequential is the Prop suite's state machine on one installed queue: the model and the queue
// side by side, one operation at a time.
type Sequential struct {
	// RealTime adds leases that end by themselves and real pauses (property 8), as
	// TestPropLeaseTime does.
	RealTime bool
	// NotPromised, when set, is offered what the queue did that it does not promise, once for
	// each property a search saw, with how many times it saw it: reduce makes its finding from
	// the first of them that shows again when replayed, at a cost the caller may decline.
	NotPromised func(p model.Property, seen int, reduce func() *verdict.Finding)
	// OnFailure, when set, is given the first failing run as it ran, before rapid shrinks it:
	// a caller can keep it at once, so that a failure is never lost to a timeout while shrinking.
	OnFailure func(unreduced *verdict.Finding)

	env  *sequential.Env
	dest *effectdest.Dest // where workers call with external effects (nil: nowhere)
	name string
	// replay runs saved cases on env's sessions (and a scheduler of its own for scheduled ones).
	replay *corpus.Replayer
	// reduce bounds the reduction of a failure's program after rapid's shrinking.
	reduce time.Duration
}

// NewSequential connects the Prop suite's sessions to an installed queue.
func NewSequential(ctx context.Context, in *sut.Installed) (*Sequential, error) {
	env, err := sequential.NewEnv(ctx, in, program.Workers, program.Lockers)
	if err != nil {
		return nil, err
	}
	return &Sequential{env: env, name: searchName(in.Queue.Name), reduce: 30 * time.Second,
		replay: &corpus.Replayer{In: in, Env: env}}, nil
}

// CatchOnly keeps a failure's program as rapid left it: the kill table only needs the catch,
// and reducing a program with real pauses costs seconds per mutant.
func (e *Sequential) CatchOnly() { e.reduce = verdict.NoReduction }

// ReduceFor bounds the reduction of a failure's program after rapid's shrinking (30 s unless set).
func (e *Sequential) ReduceFor(d time.Duration) { e.reduce = d }

func (e *Sequential) Close() {
	e.replay.Close()
	e.env.Close()
	if e.dest != nil {
		_ = e.dest.Close()
	}
}

// UseDest starts a destination of the given mode for the workers' external effects, which the
// state machine then draws and judges (property 17); Close closes it.
func (e *Sequential) UseDest(mode effectdest.Mode) error {
	d, err := effectdest.Start(mode)
	if err != nil {
		return err
	}
	e.dest = d
	e.env.UseDest(d)
	return nil
}

// Reset ends what the last run left open (a locker holding a row), so that a round of another
// mode on this database starts from an idle queue.
func (e *Sequential) Reset(ctx context.Context) error { return e.env.Reset(ctx) }

// Search runs the state machine (with real-time leases when RealTime is set) under rapid,
// counting the operations into tally as they run. On a failure it returns the reduced finding;
// an error is the harness failing, or a failure that does not reproduce.
func (e *Sequential) Search(ctx context.Context, rs Settings, tally Counter) (*verdict.Finding, Stats, error) {
	env := e.env
	search := sequential.NewSeqSearch(env, e.RealTime)
	search.OnFailure = e.OnFailure
	_, st := checkRapid(e.name, rs, tally, func(t *rapid.T, failed func() bool) {
		search.Run(ctx, t, func(action func(*rapid.T)) func(*rapid.T) {
			return func(t *rapid.T) {
				n := len(env.Trace)
				env.Counts = program.Counts{}
				defer func() {
					if !failed() && len(env.Trace) > n {
						tally.AddOps(int64(len(env.Trace) - n))
						tally.AddCounts(env.Counts)
					}
				}()
				action(t)
			}
		})
	})
	if e.NotPromised != nil {
		seen := env.NotPromised
		for _, f := range firstOfEach(seen) {
			ofIt := slices.DeleteFunc(slices.Clone(seen), func(g *verdict.Finding) bool { return g.Property() != f.Property() })
			e.NotPromised(f.Property(), len(ofIt), func() *verdict.Finding {
				return sequential.ReduceNotPromised(ctx, env, ofIt, e.reduce)
			})
		}
	}
	env.NotPromised = nil
	if !st.Failed {
		return nil, st, nil
	}
	f := search.Finding(ctx, e.reduce)
	switch {
	case f == nil && program.IsHarness(env.Last):
		return nil, st, env.Last
	case f == nil:
		return nil, st, ErrNotReproduced
	}
	if st.Flaky {
		f.Flaky = true
	}
	return f, st, nil
}

// Replay runs a saved program against the queue: sequential programs beside the model,
// scheduled ones on concurrent sessions (corpus.Replayer). It returns the finding when a
// property breaks, and the program as it ran, with the queue's answers, either way; an error
// is the harness failing.
func (e *Sequential) Replay(ctx context.Context, p *program.Program) (*verdict.Finding, string, error) {
	f, err := e.replay.Replay(ctx, p)
	return f, e.replay.Trace(), err
}

// Scheduled is scheduled mode on one installed queue: rapid draws a sequential prefix, two or
// three concurrent suffixes and the interleaving, so a failure replays and shrinks.
type Scheduled struct {
	// OnFailure, when set, is given the first failing run's finding before rapid shrinks it.
	OnFailure func(unreduced *verdict.Finding)
	// Reduce bounds the reduction of a failure's program when Search reduces it (rapid's
	// shrink time unless set).
	Reduce time.Duration

	s    *schedule.Scheduler
	in   *sut.Installed
	cfg  schedule.Config
	name string
}

// NewScheduled prepares scheduled mode; a failing run's report folder goes under reportDir
// (named after name, rewritten by each failing run, so what is left is the last one's).
func NewScheduled(ctx context.Context, in *sut.Installed, name, reportDir string) *Scheduled {
	cfg := schedule.Config{Name: name, ReportDir: reportDir}
	return &Scheduled{s: schedule.NewScheduler(ctx, in, cfg), in: in, cfg: cfg, name: searchName(name)}
}

func (e *Scheduled) Close() { e.s.Close() }

// Search runs scheduled mode under rapid, each run one concurrent history checked. On a failure
// the failing run's program is reduced (the one reducer) when shrink is set, and returned as a
// finding whose program replays it.
func (e *Scheduled) Search(ctx context.Context, rs Settings, tally Counter, shrink bool) (*verdict.Finding, Stats, error) {
	out, st := checkRapid(e.name, rs, tally, func(t *rapid.T, failed func() bool) {
		returned := false
		defer func() {
			switch {
			case failed(): // shrinking runs repeat what was counted
			case returned:
				tally.AddOps(e.s.Counts.Ops)
				tally.AddCounts(e.s.Counts)
			case e.OnFailure != nil && e.s.Last() != nil:
				e.OnFailure(e.s.Last())
			}
		}()
		e.s.Property(t)
		returned = true
	})
	tally.AddHistories(int64(st.Checks))
	if !st.Failed {
		return nil, st, nil
	}
	f := e.s.Last()
	if f == nil {
		return nil, st, fmt.Errorf("a scheduled run failed without breaking a property: %s", textfmt.OneLine(out))
	}
	if shrink {
		budget := rs.ShrinkTime
		if e.Reduce > 0 {
			budget = e.Reduce
		}
		f = schedule.Reduce(ctx, e.in, e.cfg, f, budget)
	}
	f.Checks = st.Checks
	f.Flaky = st.Flaky
	return f, st, nil
}

// ReplayFuzzInput runs one scheduled run from a FuzzScheduled input file's choices; a failing
// run's report folder goes into reportDir.
func ReplayFuzzInput(ctx context.Context, in *sut.Installed, path, reportDir string) (*verdict.Finding, error) {
	data, err := fuzz.ReadInputFile(path)
	if err != nil {
		return nil, err
	}
	cfg := schedule.Config{Name: "replay-" + filepath.Base(path), ReportDir: reportDir}
	return schedule.ReplayInput(ctx, in, searchName(in.Queue.Name), cfg, data)
}

// StressOutcome is one stress run: what it exercised, its measures and report folder, and, on
// a failure, the finding.
type StressOutcome struct {
	Seed      uint64
	Traffic   time.Duration // how long the traffic ran (the drain and the check excluded)
	Ops       int64
	Counts    program.Counts
	Measures  *timeline.Measures
	ReportDir string // the folder with its measures page: passDir, or a failure's own
	Finding   *verdict.Finding
	// NotPromised is the first thing the run saw the queue do that it does not promise, of
	// each property.
	NotPromised []*verdict.Finding
	Crashes     []stress.CrashRound // its crash rounds, when it crashed the server
}

// Stress runs free-running concurrent traffic with injected faults for d, then a drain and
// the checks. A failing run's report folder goes under reportDir; a passing one's is written
// to passDir (replacing the one before) when passDir is set.
func Stress(ctx context.Context, in *sut.Installed, seed uint64, d time.Duration, reportDir, passDir string, crash stress.Crasher) (*StressOutcome, error) {
	res, err := stress.Run(ctx, in, stress.Config{Duration: d, Seed: seed, ReportDir: reportDir, PassDir: passDir, Crash: crash})
	if err != nil {
		return nil, err
	}
	o := &StressOutcome{Seed: res.Seed, Traffic: res.Traffic, Ops: res.Counts.Ops, Counts: res.Counts, Measures: res.Measures, ReportDir: res.ReportDir, Crashes: res.Crashes}
	var seen []*verdict.Finding
	for _, v := range res.Verdict.NotPromised {
		seen = append(seen, &verdict.Finding{Violation: v, Queue: in.Queue.Name, Source: in.Queue.Source, Mode: program.Stress, ReportDir: res.ReportDir})
	}
	o.NotPromised = firstOfEach(seen)
	if !res.Failed() {
		return o, nil
	}
	v := res.Verdict
	if v.Violation == nil {
		return o, fmt.Errorf("stress seed %d: %s", res.Seed, textfmt.OneLine(v.String()))
	}
	o.Finding = &verdict.Finding{Violation: v.Violation, Queue: in.Queue.Name, Source: in.Queue.Source, Mode: program.Stress,
		Trace: v.Explanation, ReportDir: res.ReportDir}
	return o, nil
}

// SaveFailingHistory saves the failing job's history of a report folder (the whole one when no
// single job is to blame) as dst, marked with the property the checker must keep rejecting.
func SaveFailingHistory(reportDir, dst string, p model.Property) error {
	src := filepath.Join(reportDir, report.JobFile)
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join(reportDir, report.HistoryFile)
	}
	h, err := history.Load(src)
	if err != nil {
		return fmt.Errorf("reading the failing history: %v", err)
	}
	h.Expect = fmt.Sprintf("property %d", int(p))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return h.Save(dst)
}

// firstOfEach is the first finding of each property, in order.
func firstOfEach(fs []*verdict.Finding) []*verdict.Finding {
	var out []*verdict.Finding
	for _, f := range fs {
		if !slices.ContainsFunc(out, func(g *verdict.Finding) bool { return g.Property() == f.Property() }) {
			out = append(out, f)
		}
	}
	return out
}
