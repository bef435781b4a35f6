package campaign

// This file is the campaign's one door into the engines that run programs against a queue
// (program/: the Prop state machine, its reducer and .ops files; linear/: stress and scheduled
// traffic, histories and their checks; fuzz/: corpus files) and into rapid's global flags.
// Everything else in the package sees only the small types below, so that when an engine's API
// changes, this file alone changes with it.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"pgregory.net/rapid"

	"pgqcheck/fuzz"
	"pgqcheck/linear"
	"pgqcheck/model"
	"pgqcheck/program"
	"pgqcheck/sut"
)

// Property is a numbered property of the design reference, the one a finding breaks. The
// model numbers its properties as plain ints; this type gives them a name and a printed form,
// and is the only place the campaign converts.
type Property int

// The properties, numbered as in the design reference.
const (
	PClaimOrder   = Property(model.PClaimOrder)
	PFencing      = Property(model.PFencing)
	PExclusion    = Property(model.PExclusion)
	PGenerations  = Property(model.PGenerations)
	PDoneOnce     = Property(model.PDoneOnce)
	PSkipLocked   = Property(model.PSkipLocked)
	PRecovery     = Property(model.PRecovery)
	PLinearizable = Property(model.PLinearizable)
	PDBTime       = Property(model.PDBTime)
	PNoErrors     = Property(model.PNoErrors)
	// PClaimCost is a measurement (plan/), reported rather than judged on time.
	PClaimCost Property = 10
)

// Name is the property's short name.
func (p Property) Name() string {
	if p == PClaimCost {
		return "claim cost"
	}
	return model.PropertyName(int(p))
}

// String is "property N (name)", the way every verdict starts.
func (p Property) String() string { return fmt.Sprintf("property %d (%s)", int(p), p.Name()) }

// propertyOf is the property a violation breaks.
func propertyOf(v *model.Violation) Property { return Property(v.Property) }

// Finding is what an engine found, as a value: the broken promise and what replays and shows it.
type Finding struct {
	Violation *model.Violation
	// Program is the .ops text that replays the finding on its own (sequential mode; scheduled
	// mode's programs will come here too), without a header.
	Program string
	// Trace is the program as it ran, numbered, with the queue's answers (scheduled mode: the
	// drawn program and its interleaving).
	Trace string
	// Model is what the specification held when the program stopped (sequential mode).
	Model string
	// Output is everything the engine reported, kept for readers; nothing parses it.
	Output string
	// Input is a scheduled run's choices, as a FuzzScheduled corpus input.
	Input []byte
	// ReportDir is a concurrent run's report folder (history, the failing job's timeline).
	ReportDir string
	// Flaky: the failing run did not fail again when rapid replayed it.
	Flaky bool
}

// Property is the promise the finding breaks.
func (f *Finding) Property() Property { return propertyOf(f.Violation) }

// Verdict is the one-line verdict, "property N (name): what happened".
func (f *Finding) Verdict() string { return oneLine(f.Violation.Error()) }

// rapid's flags are process-wide. A search sets them just before it starts and holds rapidMu
// until rapid has read them (when the property first runs), so that concurrent workers each
// search with the settings they chose. rapid reads the shrink time later, while shrinking:
// every search of one campaign uses the same.
var rapidMu sync.Mutex

// rapidSettings are one search's rapid flags. Fail files are never written: a campaign keeps
// its own cases (.ops programs, fuzz inputs), which replay without rapid.
type rapidSettings struct {
	Seed       uint64
	Checks     int
	ShrinkTime time.Duration
}

func setRapid(name, value string) {
	f := flag.Lookup(name)
	if f == nil {
		panic("rapid flag " + name + " is not registered")
	}
	if err := f.Value.Set(value); err != nil {
		panic(err)
	}
}

// searchStats is what the property wrapper counted.
type searchStats struct {
	Failed       bool
	Flaky        bool          // the last run (rapid's replay of its shrunk case) passed
	Checks       int           // property runs until the first failure (all of them when it held)
	FirstFailure time.Duration // from the search's start to the end of the first failing run
	Elapsed      time.Duration
}

// checkRapid runs prop under rapid with settings rs, outside `go test`, and counts property
// runs, the first failing run and shrink runs itself (into st and tally), not from rapid's
// text. prop is told whether a failure has been seen (its runs from then on are shrinking).
func checkRapid(name string, rs rapidSettings, tally *Tally, prop func(t *rapid.T, failed func() bool)) (output string, st searchStats) {
	var (
		start    = time.Now()
		failed   bool
		lastOK   bool
		released sync.Once
	)
	rapidMu.Lock()
	setRapid("rapid.seed", strconv.FormatUint(rs.Seed, 10))
	setRapid("rapid.checks", strconv.Itoa(max(1, rs.Checks)))
	setRapid("rapid.shrinktime", rs.ShrinkTime.String())
	setRapid("rapid.nofailfile", "true")
	setRapid("rapid.failfile", "")
	release := func() { released.Do(rapidMu.Unlock) }

	out, fail := program.CheckOutside(name, func(t *rapid.T) {
		release()
		passed := false
		defer func() {
			lastOK = passed
			switch {
			case failed:
				tally.shrinkRun()
			case passed:
				st.Checks++
				tally.AddChecks(1)
			default:
				failed = true
				st.Checks++
				st.FirstFailure = time.Since(start)
				tally.AddChecks(1)
				tally.setShrink(+1)
			}
		}()
		prop(t, func() bool { return failed })
		passed = true
	})
	release()
	if failed {
		tally.setShrink(-1)
	}
	st.Elapsed = time.Since(start)
	st.Failed = fail
	st.Flaky = fail && lastOK
	return out, st
}

// searchName is what rapid calls a campaign's search. It names no test, so rapid finds no
// fail files of its own to replay under it, whatever the working directory.
func searchName(queue string) string { return "pgqcheck-campaign-" + linear.SafeName(queue) }

// errNotReproduced is a failure that did not fail again when its program was replayed.
var errNotReproduced = errors.New("a failing run did not fail again when its program was replayed (a nondeterministic queue or harness); rerun with the same --seed")

// seqEngine is the Prop suite's state machine on one installed queue: the model and the queue
// side by side, one operation at a time.
type seqEngine struct {
	env  *program.Env
	name string
}

func newSeqEngine(ctx context.Context, in *sut.Installed) (*seqEngine, error) {
	env, err := program.NewEnv(ctx, in, program.Workers, program.Lockers)
	if err != nil {
		return nil, err
	}
	return &seqEngine{env: env, name: searchName(in.Queue.Name)}, nil
}

func (e *seqEngine) Close() { e.env.Close() }

// Reset ends what the last run left open (a locker holding a row), so that a round of another
// mode on this database starts from an idle queue.
func (e *seqEngine) Reset(ctx context.Context) error { return e.env.Reset(ctx) }

// Search runs the state machine (without real-time leases, as TestPropQueue does) under rapid,
// counting the operations into tally as they run. On a failure it returns the reduced finding;
// an error is the harness failing, or a failure that does not reproduce.
func (e *seqEngine) Search(ctx context.Context, rs rapidSettings, tally *Tally) (*Finding, searchStats, error) {
	env := e.env
	var firstOps []program.Op
	out, st := checkRapid(e.name, rs, tally, func(t *rapid.T, failed func() bool) {
		completed := false
		defer func() {
			// A run that did not complete failed: keep the first such run's operations, in
			// case rapid's replay of its shrunk case does not fail again.
			if !completed && !failed() && firstOps == nil {
				firstOps = env.Executed()
			}
		}()
		program.Begin(ctx, t, env)
		actions := program.StateMachine(ctx, env, false)
		for key, action := range actions {
			if key == "" {
				continue
			}
			actions[key] = func(t *rapid.T) {
				n := len(env.Trace)
				env.Counts = program.Counts{}
				defer func() {
					if !failed() && len(env.Trace) > n {
						tally.observe(len(env.Trace)-n, countsOf(env.Counts))
					}
				}()
				action(t)
			}
		}
		t.Repeat(actions)
		completed = true
	})
	if !st.Failed {
		return nil, st, nil
	}
	f, err := e.reduce(ctx, out)
	if err != nil && firstOps != nil {
		// rapid's replay of its shrunk case passed: reduce the first failing run instead.
		_ = program.Replay(ctx, env, firstOps)
		f, err = e.reduce(ctx, out)
		if f != nil {
			f.Flaky = true
		}
	}
	if f != nil && st.Flaky {
		f.Flaky = true
	}
	return f, st, err
}

// reduce reduces the program env last ran and returns it as a finding.
func (e *seqEngine) reduce(ctx context.Context, rapidOutput string) (*Finding, error) {
	rf := program.Reduced(ctx, e.env, e.name, rapidOutput)
	var v *model.Violation
	if !errors.As(rf.Err, &v) {
		var h *program.HarnessError
		if errors.As(rf.Err, &h) {
			return nil, h
		}
		return nil, errNotReproduced
	}
	return &Finding{
		Violation: v,
		Program:   (&program.Program{Ops: rf.Ops}).Format(),
		Trace:     e.env.Program(),
		Model:     fmt.Sprint(e.env.Model.Snapshot(e.env.Now)),
		Output:    rf.Report,
	}, nil
}

// Replay runs a saved program from an empty queue. It returns the finding when a property
// breaks, and the program as it ran, with the queue's answers, either way; an error is the
// harness failing.
func (e *seqEngine) Replay(ctx context.Context, p *savedProgram) (*Finding, string, error) {
	err := program.Replay(ctx, e.env, p.ops)
	trace := e.env.Program()
	if err == nil {
		return nil, trace, nil
	}
	var v *model.Violation
	if !errors.As(err, &v) {
		return nil, trace, err
	}
	return &Finding{
		Violation: v,
		Program:   (&program.Program{Ops: p.ops}).Format(),
		Trace:     trace,
		Model:     fmt.Sprint(e.env.Model.Snapshot(e.env.Now)),
		Output:    program.Report(e.env, err),
	}, trace, nil
}

// countsOf converts the state machine's counts.
func countsOf(c program.Counts) Counts {
	return Counts{Enqueued: c.Enqueued, Claims: c.Claims, EmptyClaims: c.EmptyClaims, Completions: c.Completions,
		RejectedCompletions: c.RejectedCompletions, StaleTokenCompletion: c.StaleTokenCompletion, Expiries: c.Expiries,
		Pauses: c.Pauses, Locks: c.Locks, Releases: c.Releases, Cancels: c.Cancels, Terminates: c.Terminates,
		Crashes: c.Crashes, Drains: c.Drains, DrainedJobs: c.DrainedJobs, ShortLeases: c.ShortLeases, Errors: c.Errors}
}

// savedProgram is a parsed .ops file.
type savedProgram struct {
	Header map[string]string
	ops    []program.Op
}

// parseProgram reads .ops text.
func parseProgram(text string) (*savedProgram, error) {
	p, err := program.Parse(text)
	if err != nil {
		return nil, err
	}
	return &savedProgram{Header: p.Header, ops: p.Ops}, nil
}

// saveProgram writes a finding's program into dir with header, unless a program with the same
// operations is already there: then it returns that file and fresh=false.
func saveProgram(dir, name string, f *Finding, header map[string]string) (path string, fresh bool, err error) {
	p, err := parseProgram(f.Program)
	if err != nil {
		return "", false, fmt.Errorf("the finding's program does not parse back (%v)", err)
	}
	return program.Save(dir, name, &program.Finding{Err: f.Violation, Ops: p.ops}, header)
}

// foundDir is where saved programs live, relative to the module root.
var foundDir = program.FoundDir

// replayScheduled replays a scheduled .ops program: sessions and their interleaving.
func replayScheduled(ctx context.Context, in *sut.Installed, p *savedProgram) (*Finding, error) {
	return nil, errors.New("scheduled programs replay with the new scheduler")
}

// schedEngine is scheduled mode on one installed queue: rapid draws a sequential prefix, two
// or three concurrent suffixes and the interleaving, so a failure replays and shrinks.
type schedEngine struct {
	s    *linear.Scheduler
	in   *sut.Installed
	cfg  linear.ScheduledConfig
	name string
}

// newSchedEngine prepares scheduled mode; a failing run's report folder goes under reportDir
// (named after name, rewritten by each failing run, so what is left is the last one's).
func newSchedEngine(ctx context.Context, in *sut.Installed, name, reportDir string) *schedEngine {
	cfg := linear.ScheduledConfig{Name: name, ReportDir: reportDir}
	return &schedEngine{s: linear.NewScheduler(ctx, in, cfg), in: in, cfg: cfg, name: searchName(name)}
}

func (e *schedEngine) Close() { e.s.Close() }

// Search runs scheduled mode under rapid, each run one concurrent history checked. On a failure
// the failing run is replayed, shrunk further when shrink is set (whole operations, then
// bytes), and returned as a finding.
func (e *schedEngine) Search(ctx context.Context, rs rapidSettings, tally *Tally, shrink bool) (*Finding, searchStats, error) {
	_, st := checkRapid(e.name, rs, tally, func(t *rapid.T, _ func() bool) { e.s.Property(t) })
	tally.AddHistories(int64(st.Checks))
	if !st.Failed {
		return nil, st, nil
	}
	data := e.s.LastFailure()
	if len(data) == 0 {
		return nil, st, errors.New("a scheduled run failed without recording its choices (a harness failure)")
	}
	var lf *linear.Finding
	if shrink {
		lf = linear.ShrinkInput(ctx, e.in, e.name, e.cfg, data)
	} else {
		lf = linear.ReplayInput(ctx, e.in, e.name, e.cfg, data)
	}
	f, err := scheduledFinding(lf, e.s.LastReport())
	if f != nil {
		f.Flaky = st.Flaky
	}
	return f, st, err
}

// scheduledFinding turns a scheduled run's failure into a finding.
func scheduledFinding(lf *linear.Finding, reportDir string) (*Finding, error) {
	if lf == nil {
		return nil, errNotReproduced
	}
	if lf.Violation == nil {
		return nil, fmt.Errorf("a scheduled run failed without breaking a property: %s", oneLine(lf.Verdict()))
	}
	f := &Finding{Violation: lf.Violation, Output: lf.Output, Input: lf.Input, ReportDir: reportDir}
	if reportDir != "" {
		if h, err := linear.Load(filepath.Join(reportDir, linear.ReportHistory)); err == nil {
			f.Trace = h.Program
		}
	}
	return f, nil
}

// replayFuzzInput runs one scheduled run from a FuzzScheduled input file's choices; a failing
// run's report folder goes into reportDir, a fresh folder.
func replayFuzzInput(ctx context.Context, in *sut.Installed, path, reportDir string) (*Finding, error) {
	data, err := fuzz.ReadInputFile(path)
	if err != nil {
		return nil, err
	}
	cfg := linear.ScheduledConfig{Name: "replay-" + filepath.Base(path), ReportDir: reportDir}
	lf := linear.ReplayInput(ctx, in, searchName(in.Queue.Name), cfg, data)
	if lf == nil {
		return nil, nil
	}
	// The run's report folder is the only one in reportDir, which the caller made for it.
	dir, _ := filepath.Glob(filepath.Join(reportDir, "pgqcheck-linear-*"))
	report := ""
	if len(dir) == 1 {
		report = dir[0]
	}
	return scheduledFinding(lf, report)
}

// stressOutcome is one stress run: what it exercised and, on a failure, the finding.
type stressOutcome struct {
	Seed    uint64
	Traffic time.Duration // how long the traffic ran (the drain and the check excluded)
	Ops     int64
	Counts  Counts
	Finding *Finding
}

// runStress runs free-running concurrent traffic with injected faults for d, then a drain and
// the checks. A failing run's report folder goes under reportDir.
func runStress(ctx context.Context, in *sut.Installed, seed uint64, d time.Duration, reportDir string) (*stressOutcome, error) {
	res, err := linear.Stress(ctx, in, linear.StressConfig{Duration: d, Seed: seed, ReportDir: reportDir})
	if err != nil {
		return nil, err
	}
	c := res.Counts
	o := &stressOutcome{Seed: res.Seed, Traffic: res.Traffic, Ops: int64(c.Ops), Counts: Counts{
		Enqueued: int64(c.Jobs), Claims: int64(c.Claims - c.EmptyClaims), EmptyClaims: int64(c.EmptyClaims),
		Completions: int64(c.Accepted), RejectedCompletions: int64(c.Refused), Expiries: int64(c.Expiries),
		Locks: int64(c.Locks), Cancels: int64(c.Cancels), Terminates: int64(c.Terminations), ClaimWaits: int64(c.ClaimWaits)}}
	if !res.Failed() {
		return o, nil
	}
	v := res.Verdict
	if v.Violation == nil {
		return o, fmt.Errorf("stress seed %d: %s", res.Seed, oneLine(v.String()))
	}
	o.Finding = &Finding{Violation: v.Violation, Trace: v.Explanation, Output: res.String() + "\n" + v.Explanation, ReportDir: res.ReportDir}
	return o, nil
}

// saveFailingHistory saves the failing job's history of a report folder (the whole one when no
// single job is to blame) as dst, marked with the property the checker must keep rejecting.
func saveFailingHistory(reportDir, dst string, p Property) error {
	src := filepath.Join(reportDir, linear.ReportJob)
	if _, err := os.Stat(src); err != nil {
		src = filepath.Join(reportDir, linear.ReportHistory)
	}
	h, err := linear.Load(src)
	if err != nil {
		return fmt.Errorf("reading the failing history: %v", err)
	}
	h.Expect = fmt.Sprintf("property %d", int(p))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return h.Save(dst)
}

// HistoryVerdict is what re-checking a saved history concluded.
type HistoryVerdict struct {
	OK          bool
	Violation   *model.Violation // nil when OK, or when the history is malformed
	Text        string           // the one-line verdict
	Problems    []string
	Explanation string
}

// CheckHistory re-checks a saved history (no Postgres needed) and, when htmlOut is set, writes
// porcupine's timeline. A nil verdict means the file is not a history; a non-nil error with a
// verdict means only the timeline could not be written.
func CheckHistory(path, htmlOut string) (*HistoryVerdict, error) {
	v, err := linear.CheckFile(path, htmlOut)
	if v == nil {
		return nil, err
	}
	return &HistoryVerdict{OK: v.OK, Violation: v.Violation, Text: v.String(), Problems: v.Problems, Explanation: v.Explanation}, err
}

// fuzzInputFile is a scheduled run's choices as a FuzzScheduled corpus file.
func fuzzInputFile(data []byte) []byte { return linear.FuzzInputFile(data) }

// fuzzScheduledDir is FuzzScheduled's corpus folder, relative to the module root.
var fuzzScheduledDir = filepath.Join("fuzz", fuzz.ScheduledCorpusDir)

// safeName turns a name into a file-name part.
func safeName(s string) string { return linear.SafeName(s) }

// The files of a concurrent run's report folder that a summary points to.
const (
	reportTimeline = linear.ReportTimeline
	reportVerdict  = linear.ReportVerdict
)
