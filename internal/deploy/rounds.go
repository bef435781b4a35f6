package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/modroot"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Rounds is a campaign of deployment runs: one run after another, each with a seed of its own
// and a database of its own, until Duration is up (at least one), stopping at the first
// violation unless KeepGoing.
type Rounds struct {
	Server    *pgserver.Server
	Target    Target
	Duration  time.Duration
	Window    time.Duration // each run's (0: the target's)
	Workers   int
	Faults    []FaultKind
	Seed      uint64
	KeepGoing bool
	ReportDir string
	// Shrink: a violating run's schedule is shrunk (Shrink) within this budget (0: not).
	Shrink time.Duration
	Log    io.Writer
}

// Summary is what a campaign of runs did and found.
type Summary struct {
	Target  string
	Source  string
	Seed    uint64
	Results []*Result
	// Shrunk is the first violating run's shrunk replay, where one was asked for.
	Shrunk *Shrunk
	Took   time.Duration
}

// RoundSeed is round n's seed of a campaign seeded with seed.
func RoundSeed(seed uint64, n int) uint64 {
	x := seed + uint64(n)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	return x >> 1
}

// RunRounds runs the campaign. An error is the harness failing (or ctx ending) with nothing
// judged of the run in progress; the summary holds the runs before it.
func RunRounds(ctx context.Context, c Rounds) (*Summary, error) {
	begin := time.Now()
	s := &Summary{Target: c.Target.Name, Source: c.Target.Source, Seed: c.Seed}
	progs, err := NewPrograms()
	if err != nil {
		return s, err
	}
	defer progs.Close()
	for n := 0; n == 0 || time.Since(begin) < c.Duration; n++ {
		cfg := Config{Server: c.Server, Target: c.Target, Window: c.Window, Workers: c.Workers, Faults: c.Faults,
			Seed: RoundSeed(c.Seed, n), ReportDir: c.ReportDir, Programs: progs}
		res, err := Run(ctx, cfg)
		if err != nil {
			s.Took = time.Since(begin)
			return s, err
		}
		s.Results = append(s.Results, res)
		if c.Log != nil {
			fmt.Fprintf(c.Log, "round %d: %s\n", n+1, res.Line())
		}
		if !res.OK() {
			if c.Shrink > 0 && s.Shrunk == nil {
				if s.Shrunk, err = Shrink(ctx, cfg, res, c.Shrink, c.Log); err != nil {
					s.Took = time.Since(begin)
					return s, err
				}
			}
			if !c.KeepGoing {
				break
			}
		}
	}
	s.Took = time.Since(begin)
	return s, nil
}

// Line is a run in one line: what was injected, observed and found.
func (r *Result) Line() string {
	verdict := "held"
	if !r.OK() {
		verdict = "VIOLATED " + r.FirstText()
		if r.FirstViolation >= 0 {
			verdict += fmt.Sprintf(" (first at %s)", model.Stamp(r.FirstViolation))
		}
	}
	return fmt.Sprintf("seed %d, %s; %d jobs, %d executions, %s; %s; report %s", r.Seed, r.Schedule.Summary(), r.Enqueued, r.Executions,
		effectsText(r.Effects), verdict, r.Dir)
}

// OK reports whether every run held.
func (s *Summary) OK() bool {
	for _, r := range s.Results {
		if !r.OK() {
			return false
		}
	}
	return true
}

// Totals are the campaign's counts: faults injected by kind, jobs, executions, effects, and
// the time from a violating run's start to its first violation (-1: none).
type Totals struct {
	Faults         map[FaultKind]int
	Enqueued       int
	Executions     int
	Effects        int64 // -1: the queue counts none
	FirstViolation time.Duration
}

func (s *Summary) Totals() Totals {
	t := Totals{Faults: map[FaultKind]int{}, Effects: -1, FirstViolation: -1}
	for _, r := range s.Results {
		for k, n := range r.Schedule.Counts() {
			t.Faults[k] += n
		}
		t.Enqueued += r.Enqueued
		t.Executions += r.Executions
		if r.Effects >= 0 {
			t.Effects = max(t.Effects, 0) + r.Effects
		}
		if !r.OK() && t.FirstViolation < 0 {
			t.FirstViolation = r.FirstViolation
		}
	}
	return t
}

// FaultsText is the faults injected, by kind, in one phrase.
func (t Totals) FaultsText() string {
	var parts []string
	for _, k := range FaultKinds {
		if n := t.Faults[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Table merges the runs' verdict tables: a property is violated if any run violated it, and
// what was not promised is counted over all of them.
func (s *Summary) Table() *verdict.Table {
	var merged *verdict.Table
	for _, r := range s.Results {
		t := r.Table()
		if merged == nil {
			merged = t
			continue
		}
		for p, v := range t.Violated {
			merged.Violated[p] = merged.Violated[p] || v
		}
		for p, n := range t.NotPromised {
			merged.NotPromised[p] += n
		}
	}
	return merged
}

// Print writes the summary: the totals, the first violation with its report and its replay,
// and the verdict table of every run together.
func (s *Summary) Print(w io.Writer) {
	t := s.Totals()
	fmt.Fprintf(w, "deploy %s: %d runs in %v (seed %d); faults injected: %s; %d jobs enqueued, %d executions observed, %s\n",
		s.Target, len(s.Results), s.Took.Round(time.Second), s.Seed, t.FaultsText(), t.Enqueued, t.Executions, effectsText(t.Effects))
	for _, r := range s.Results {
		if r.OK() {
			continue
		}
		fmt.Fprintf(w, "first violation: %s, %s into its run (seed %d)\nreport: %s\nreplay: pgqcheck deploy --replay %s\n",
			r.FirstText(), model.Stamp(r.FirstViolation), r.Seed, r.Dir, r.Dir+"/"+RunFile)
		break
	}
	if s.Shrunk != nil {
		fmt.Fprintf(w, "shrunk: %s\n", s.Shrunk)
	}
	if len(s.Results) > 0 {
		fmt.Fprintf(w, "\n%s", tableText(s.Table()))
	}
}

// LoadSpec reads a run's run.json.
func LoadSpec(path string) (Spec, error) {
	var s Spec
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%s: not a deployment run's run.json: %v", path, err)
	}
	return s, nil
}

// TargetOf is the target a saved run names: a library's, or a queue of SQL (its folder or a
// built-in) with the saved lease.
func TargetOf(s Spec) (Target, error) {
	if t, err := Library(s.Target); err == nil {
		return t, nil
	}
	if s.Queue == "" {
		return Target{}, fmt.Errorf("the run names target %q, which is no library's and no queue's", s.Target)
	}
	dir := s.Queue
	if root, ok := modroot.Here(); ok && !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	var q *sut.Queue
	var err error
	if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
		q, err = sut.LoadDir(dir)
	} else {
		q, err = sut.Builtin(s.Queue)
	}
	if err != nil {
		return Target{}, err
	}
	t, err := SQLTarget(q, s.Lease)
	if err == nil && s.Target == "python" {
		var python string
		if python, err = FindPython(); err == nil {
			p, perr := Python(python)
			t, err = p, perr
		}
	}
	return t, err
}

// Replay runs a saved run again: the same target, seed, workers, window and workload, and the
// same fault schedule. Real processes on a real server do not repeat each other's timing, so
// a replay reaches the same faults at the same times, and may or may not break the promise
// again: its verdict is a fresh one.
func Replay(ctx context.Context, srv *pgserver.Server, path, reportDir string) (*Result, error) {
	s, err := LoadSpec(path)
	if err != nil {
		return nil, err
	}
	t, err := TargetOf(s)
	if err != nil {
		return nil, err
	}
	sched := s.Schedule
	if sched == nil {
		sched = Schedule{}
	}
	return Run(ctx, Config{Server: srv, Target: t, Workers: s.Workers, Window: s.Window, WorkMS: s.WorkMS, Rate: s.Rate,
		Seed: s.Seed, Schedule: sched, ReportDir: reportDir})
}

// Markdown is the verdict table of several campaigns, one row each: what was injected and
// observed, what held, what broke, when the first violation came, and where its replay is.
func Markdown(w io.Writer, sums []*Summary, kept map[string]string) {
	fmt.Fprintln(w, "| deployment | runs | faults injected | jobs | executions | effects | verdict | broken (not promised: measured) | first violation | replay |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range sums {
		t := s.Totals()
		table := s.Table()
		var broken, measured []string
		for _, p := range table.Judged {
			switch {
			case table.Violated[p]:
				broken = append(broken, fmt.Sprint(int(p)))
			case table.NotPromised[p] > 0:
				measured = append(measured, fmt.Sprintf("%d (%d)", int(p), table.NotPromised[p]))
			}
		}
		verdict, first, replay := "held", "", ""
		if !s.OK() {
			verdict = "VIOLATED"
			first = model.Stamp(t.FirstViolation)
		}
		if k := kept[s.Target]; k != "" {
			replay = "`" + k + "`"
		}
		effects := "-"
		if t.Effects >= 0 {
			effects = fmt.Sprint(t.Effects)
		}
		cell := strings.Join(broken, ", ")
		if len(measured) > 0 {
			cell = strings.TrimPrefix(cell+"; "+strings.Join(measured, ", "), "; ")
		}
		fmt.Fprintf(w, "| %s | %d | %s | %d | %d | %s | %s | %s | %s | %s |\n", s.Target, len(s.Results), t.FaultsText(), t.Enqueued, t.Executions,
			effects, verdict, cell, first, replay)
	}
}

// Keep copies a campaign's first violating run (its shrunk replay where there is one) into
// dir/TARGET: run.json, which replays it, deploy.txt and, where one job is to blame, its
// timeline. It returns the run.json kept ("" when every run held).
func (s *Summary) Keep(dir string) (string, error) {
	src := ""
	for _, r := range s.Results {
		if !r.OK() {
			src = r.Dir
			break
		}
	}
	if s.Shrunk != nil {
		src = s.Shrunk.Dir
	}
	if src == "" {
		return "", nil
	}
	dst := filepath.Join(dir, s.Target)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{RunFile, DeployFile, report.TimelineFile, report.VerdictFile} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dst, RunFile), nil
}
