package campaign

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/plan"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/internal/timeline"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
)

// ReportFormat changes when a field changes meaning; readers refuse formats they do not know.
// Format 2: a failure's seed is its search's rapid seed, rapid fail files are no longer kept,
// and a failure carries its program, trace and model as fields of their own.
const ReportFormat = 2

// Report is a campaign's result: where it ran, what it exercised, what held and what failed,
// and how to replay each failure.
type Report struct {
	Format        int            `json:"format"`
	Tool          string         `json:"tool"`
	Started       time.Time      `json:"started"`
	Finished      time.Time      `json:"finished"`
	ElapsedS      float64        `json:"elapsed_s"`
	Requested     string         `json:"requested_duration,omitempty"`
	StopReason    string         `json:"stop_reason"`
	Interrupted   bool           `json:"interrupted,omitempty"`
	Backend       string         `json:"backend"`
	ServerVersion string         `json:"server_version"`
	Where         string         `json:"where"`
	Queue         QueueInfo      `json:"queue"`
	Mode          string         `json:"mode"`
	Workers       int            `json:"workers"`
	Seed          uint64         `json:"seed"`
	ReplayRoot    string         `json:"replay_root"`
	Checks        int64          `json:"checks"`
	Ops           int64          `json:"ops"`
	Histories     int64          `json:"histories"`
	ShrinkRuns    int64          `json:"shrink_runs"`
	ChecksPerS    float64        `json:"checks_per_s"`
	OpsPerS       float64        `json:"ops_per_s"`
	Counts        program.Counts `json:"counts"`
	Properties    []*PropStat    `json:"properties"`
	Failures      []*Failure     `json:"failures"`
	// NotPromised is the first thing the queue was seen doing that it does not promise, with
	// its reduced program (sequential mode) or the job's history (concurrent modes).
	NotPromised *Failure `json:"not_promised,omitempty"`
	// NotPromisedEach is the first of each property the queue does not promise, in the order
	// found (NotPromised leads it).
	NotPromisedEach []*Failure   `json:"not_promised_each,omitempty"`
	HarnessErrors   []string     `json:"harness_errors,omitempty"`
	ClaimCost       *plan.Report `json:"claim_cost,omitempty"` // property 10, when measured
	Stress          *StressRound `json:"stress,omitempty"`     // the latest stress round's shape
	Verdict         string       `json:"verdict"`              // held, violated, error
	Shards          []string     `json:"shards,omitempty"`
	Crashes         *CrashTally  `json:"server_crashes,omitempty"` // crash rounds, when run
	// Dest is the mode of the destination the sequential modes' workers called with external
	// effects ("": none).
	Dest effectdest.Mode `json:"dest,omitempty"`
}

// StressRound is one stress round's shape: the seed's operational measures, and the measures
// page drawing its throughput, latency and fault windows over time. A campaign's report keeps
// its latest stress round's (a failing round's page is also in its failure's report folder).
type StressRound struct {
	Worker    int                `json:"worker"`
	Round     int                `json:"round"`
	Seed      uint64             `json:"seed"`
	ReportDir string             `json:"report_dir"`
	Page      string             `json:"page"`
	Measures  *timeline.Measures `json:"measures"`
}

// Verdicts.
const (
	VerdictHeld     = "held"
	VerdictViolated = "violated"
	VerdictError    = "error"
)

// QueueInfo names the queue a report judged.
type QueueInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Dir    string `json:"dir,omitempty"` // absolute folder; empty for a built-in
	Order  string `json:"claim_order"`
	// Shape is what the queue declares about itself: what is judged, what is not promised.
	Shape model.Shape `json:"shape,omitempty"`
}

// PropStat is one property's outcome in a run.
type PropStat struct {
	Number      model.Property `json:"number"`
	Name        string         `json:"name"`
	Status      string         `json:"status"` // held, violated, not checked; for 10: flat, GROWS
	Failures    int            `json:"failures"`
	Exercised   int64          `json:"exercised"`
	ExercisedBy string         `json:"exercised_by"`
}

// Property statuses.
const (
	StatusHeld       = "held"
	StatusViolated   = "violated"
	StatusNotChecked = "not checked"
	// StatusNotPromised: the queue declares it does not make this promise; what it did against
	// it is counted (Exercised) and shown, and fails nothing.
	StatusNotPromised = "not promised"
	// StatusNotJudged: the queue's shape has nothing to judge (no generation counter).
	StatusNotJudged = "not judged"
	StatusFlat      = "flat"
	StatusGrows     = "GROWS"
)

// Failure is one violation found, with what shows and replays it. Property is the typed value
// the engine detected; the JSON keeps its number.
type Failure struct {
	Property     model.Property `json:"property"`
	PropertyName string         `json:"property_name"`
	Verdict      string         `json:"verdict"`           // one line, "property N (name): what happened"
	Program      string         `json:"program,omitempty"` // the .ops program that replays it
	Trace        string         `json:"trace,omitempty"`   // the program as it ran, with the queue's answers
	Model        string         `json:"model,omitempty"`   // what the model held when it stopped
	Mode         string         `json:"mode"`
	Worker       int            `json:"worker"`
	Round        int            `json:"round"`
	Seed         uint64         `json:"seed,omitempty"` // the round's seed (rapid.seed of its search; stress mode's seed)
	FoundAfterS  float64        `json:"found_after_s"`  // since the campaign started
	// ProgramFile is the saved .ops program (TestPropPrograms replays it); FuzzFile, a scheduled
	// failure's FuzzScheduled corpus entry; ReplayFile, a stress failure's saved history.
	// ReplayCommand is the one `pgqcheck replay` (or, for a history, `go test`) line.
	ReplayFile     string  `json:"replay_file,omitempty"`
	ReplayCommand  string  `json:"replay_command,omitempty"`
	ProgramFile    string  `json:"program_file,omitempty"`
	ProgramCommand string  `json:"program_command,omitempty"`
	FuzzFile       string  `json:"fuzz_file,omitempty"`
	FuzzCommand    string  `json:"fuzz_command,omitempty"`
	ReportDir      string  `json:"report_dir,omitempty"` // concurrent modes: the history, the failing job's timeline, the verdict
	ShrinkS        float64 `json:"shrink_s"`             // spent minimising it after it was found
	Known          bool    `json:"known,omitempty"`      // a case saved earlier that still fails
	Flaky          bool    `json:"flaky,omitempty"`      // the failing run did not fail again when replayed

	foundAt time.Time        // when the first failing run ended
	finding *verdict.Finding // the engine's finding, in this process
}

// Finding is the engine's finding behind a failure found in this process (nil for one read
// back from a report).
func (f *Failure) Finding() *verdict.Finding { return f.finding }

// newFailure records a finding of a mode's round.
func newFailure(f *verdict.Finding, mode string, worker, round int, seed uint64) *Failure {
	p := f.Property()
	prog := ""
	if f.Program != nil {
		prog = f.Program.Body()
	}
	return &Failure{Property: p, PropertyName: p.Name(), Verdict: f.Verdict(), Program: prog, Trace: f.Trace, Model: f.Model,
		Mode: mode, Worker: worker, Round: round, Seed: seed, ReportDir: f.ReportDir, Flaky: f.Flaky, finding: f}
}

// allProperties are the design's properties, in order. 10 (claim cost) is a measurement, made
// after the campaign: it flags a claim whose cost grows with done rows, and is reported, not
// counted as a violation (timings on shared machines are not verdicts).
var allProperties = model.Properties

// exercised says how often a run gave a property something to check: the row of exercises
// that names it.
func exercised(p model.Property, r *Report) (int64, string) {
	for _, e := range exercises {
		if slices.Contains(e.props, p) {
			return e.by(r.Counts, r)
		}
	}
	if t := p.Tally(); t != "" {
		return r.Counts.Tallies[t], t + " accepted"
	}
	return 0, "measured by a separate benchmark, not by run"
}

// exercises says, for each property, what in a run's counts gave it something to check.
var exercises = []struct {
	props []model.Property
	by    func(c program.Counts, r *Report) (int64, string)
}{
	{[]model.Property{model.PClaimOrder, model.PExclusion, model.PGenerations}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Claims, "claims that returned a job"
	}},
	{[]model.Property{model.PFencing}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Completions + c.RejectedCompletions, fmt.Sprintf("completions (%d refused, %d with an older token)", c.RejectedCompletions, c.StaleTokenCompletion)
	}},
	{[]model.Property{model.PDoneOnce}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Completions + c.DrainedJobs, fmt.Sprintf("jobs completed (%d by drains)", c.DrainedJobs)
	}},
	{[]model.Property{model.PSkipLocked}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Locks, fmt.Sprintf("row locks held by lockers (%d released, %d interrupted, %d terminated)", c.Releases, c.Interrupts, c.Terminates)
	}},
	{[]model.Property{model.PRecovery}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Expiries + c.Pauses + c.Drains, fmt.Sprintf("expiries, pauses past a lease and drains (%d jobs drained, %d empty claims)", c.DrainedJobs, c.EmptyClaims)
	}},
	{[]model.Property{model.PLinearizable}, func(_ program.Counts, r *Report) (int64, string) {
		return r.Histories, "concurrent histories checked"
	}},
	{[]model.Property{model.PDBTime, model.PNoErrors}, func(_ program.Counts, r *Report) (int64, string) {
		return r.Ops, "operations run and checked"
	}},
	{[]model.Property{model.PWriteFencing}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Failures + c.Renewals, fmt.Sprintf("failures and renewals accepted (%d and %d)", c.Failures, c.Renewals)
	}},
	{[]model.Property{model.PRetries}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Failures, "failures accepted, each retried after its backoff or dead"
	}},
	{[]model.Property{model.PRenewal}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Renewals, "renewals accepted"
	}},
	{[]model.Property{model.PScheduling}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Scheduled + c.Failures, fmt.Sprintf("jobs due later (%d enqueued with a run-at delay, %d failures waiting their backoff)", c.Scheduled, c.Failures)
	}},
	{[]model.Property{model.PDrain}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Drains, fmt.Sprintf("drains (%d jobs drained)", c.DrainedJobs)
	}},
	{[]model.Property{model.PEffects}, func(c program.Counts, _ *Report) (int64, string) {
		return c.Effects, "business effects written, each in its completion's transaction"
	}},
	{[]model.Property{model.PExternal}, func(c program.Counts, r *Report) (int64, string) {
		return c.Calls, fmt.Sprintf("calls of a destination in %s mode (%d retried after a lost reply, %d duplicates)", r.Dest, c.Retries, c.Duplicates)
	}},
}

// fillProperties computes each property's status from the failures and the modes' coverage.
func (r *Report) fillProperties(checked []model.Property) {
	on := map[model.Property]bool{}
	for _, p := range checked {
		on[p] = true
	}
	r.Properties = nil
	for _, p := range allProperties {
		ps := &PropStat{Number: p, Name: p.Name(), Status: StatusNotChecked}
		if on[p] && r.Checks+r.Histories > 0 {
			ps.Status = StatusHeld
		}
		for _, f := range r.Failures {
			if f.Property == p {
				ps.Failures++
				ps.Status = StatusViolated
				// A promise the queue declares it does not make is measured, not broken.
				if !r.Queue.Shape.Promised(p) {
					ps.Status = StatusNotPromised
				}
			}
		}
		ps.Exercised, ps.ExercisedBy = exercised(p, r)
		switch sh := r.Queue.Shape; {
		case p == model.PExternal && r.Dest == "":
			ps.ExercisedBy = "judged where workers call a destination (--dest)"
		case p == model.PExternal && !r.Dest.Fences() && ps.Status == StatusHeld:
			ps.Status = StatusNotPromised
			ps.Exercised, ps.ExercisedBy = r.Counts.Duplicates, fmt.Sprintf("duplicate effects observed in %d calls (the destination neither fences nor deduplicates)", r.Counts.Calls)
		case !sh.Judged(p):
			ps.Status, ps.ExercisedBy = StatusNotJudged, ps.ExercisedBy+"; "+sh.NotJudged(p)
		case p == model.PSkipLocked && !sh.Promised(p) && ps.Status != StatusNotChecked:
			ps.Status = StatusNotPromised
			ps.Exercised, ps.ExercisedBy = int64(ps.Failures), "waits for a row lock observed (the queue declares its own steps may wait for one)"
		case !sh.Promised(p) && ps.Status != StatusViolated && ps.Status != StatusNotChecked:
			ps.Status = StatusNotPromised
			ps.Exercised, ps.ExercisedBy = r.Counts.NotPromised, verdict.NotPromisedWhat(p, int(r.Counts.NotPromised))+" observed (the queue declares it does not fence its workers' writes)"
		}
		r.Properties = append(r.Properties, ps)
	}
}

// setClaimCost records property 10's measurement.
func (r *Report) setClaimCost(c *plan.Report) {
	r.ClaimCost = c
	for _, ps := range r.Properties {
		if ps.Number != model.PClaimCost || !c.Measurable {
			continue
		}
		ps.Status, ps.Exercised, ps.ExercisedBy = StatusFlat, int64(len(c.Rows)), "states measured with EXPLAIN (ANALYZE, BUFFERS)"
		if c.Grows {
			ps.Status = StatusGrows
		}
	}
}

// decideVerdict sets the verdict from failures and harness errors.
func (r *Report) decideVerdict() {
	broken := 0
	for _, f := range r.Failures {
		if r.Queue.Shape.Promised(f.Property) {
			broken++
		}
	}
	switch {
	case broken > 0:
		r.Verdict = VerdictViolated
	case len(r.HarnessErrors) > 0:
		r.Verdict = VerdictError
	default:
		r.Verdict = VerdictHeld
	}
}

// Summary writes the short human summary of a report: the run and what it exercised, the
// properties, what it measured, each failure, and the verdict.
func (r *Report) Summary(w io.Writer) {
	p := lines(w)
	r.summaryRun(p)
	r.summaryProperties(p)
	r.summaryMeasured(p)
	for i, f := range r.Failures {
		f.summary(p, i+1)
	}
	for _, e := range r.HarnessErrors {
		p("  harness error: %s", e)
	}
	r.summaryVerdict(p)
}

// printer writes one line of a summary.
type printer func(format string, args ...any)

func lines(w io.Writer) printer {
	return func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
}

// indented writes each line of text four blanks in.
func (p printer) indented(text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		p("    %s", l)
	}
}

// summaryRun is where the run ran, how long, and what it exercised.
func (r *Report) summaryRun(p printer) {
	p("pgqcheck run: queue %s (%s), %s backend, PostgreSQL %s", r.Queue.Name, r.Queue.Source, r.Backend, textfmt.FirstWord(r.ServerVersion))
	if len(r.Shards) > 0 {
		p("  merged from %d shard reports: %s", len(r.Shards), strings.Join(r.Shards, ", "))
	}
	p("  %s in %s mode with %d worker(s), seed %d; stopped: %s", Round(seconds(r.ElapsedS)), r.Mode, r.Workers, r.Seed, r.StopReason)
	p("  %s checks (%.0f/s), %s operations (%.0f/s), %s histories, %s shrink runs",
		num(r.Checks), r.ChecksPerS, num(r.Ops), r.OpsPerS, num(r.Histories), num(r.ShrinkRuns))
	c := r.Counts
	p("  claims %s (+%s empty), completions %s accepted / %s refused (%s with an older token), expiries %s, pauses %s, locks %s, drains %s",
		num(c.Claims), num(c.EmptyClaims), num(c.Completions), num(c.RejectedCompletions), num(c.StaleTokenCompletion), num(c.Expiries), num(c.Pauses), num(c.Locks), num(c.Drains))
	if r.Crashes != nil {
		p("  server crashes: %s", r.Crashes)
	}
	if n := c.DroppedReplies + c.Cuts + c.Delays + c.Stalls; n > 0 {
		p("  proxy faults %s: %s replies dropped after the server ran the statement, %s connections cut mid-request, %s replies delayed, %s requests stalled; %s operations with unknown outcomes",
			num(n), num(c.DroppedReplies), num(c.Cuts), num(c.Delays), num(c.Stalls), num(c.Unknown))
	}
	if c.ClaimWaits > 0 {
		p("  observed: %s claim(s) waited behind a row lock the stress chaos injected (exempt as an injected fault; Prop and scheduled mode judge skip-don't-wait strictly)", num(c.ClaimWaits))
	}
}

// summaryProperties is the properties table: status, number, name, what exercised each.
func (r *Report) summaryProperties(p printer) {
	p("  properties:")
	for _, ps := range r.Properties {
		extra := ""
		if ps.Failures > 0 {
			extra = fmt.Sprintf(", %d failure(s)", ps.Failures)
		}
		p("    %-12s %2d %-22s %s %s%s", ps.Status, int(ps.Number), ps.Name, num(ps.Exercised), ps.ExercisedBy, extra)
	}
}

// summaryMeasured is what the run saw besides failures: the first thing the queue did that it
// does not promise, the latest stress round's measures, the claim cost.
func (r *Report) summaryMeasured(p printer) {
	for _, f := range r.NotPromisedEach {
		p("  not promised, first seen (%s mode, worker %d): %s", f.Mode, f.Worker, f.Verdict)
		if f.Trace != "" {
			p.indented(f.Trace)
		}
	}
	if st := r.Stress; st != nil && st.Measures != nil {
		p("  latest stress round (worker %d, round %d, seed %d):", st.Worker, st.Round, st.Seed)
		p.indented(st.Measures.Summary())
		if st.Page != "" {
			p("    measures page: %s", st.Page)
		}
	}
	if c := r.ClaimCost; c != nil {
		p("  claim cost: %s", c.Verdict)
		if c.Measurable {
			p.indented(c.Summary())
		}
	}
}

// summary is failure number n: how it was found, its trace and where its case is kept.
func (f *Failure) summary(p printer, n int) {
	tag := ""
	if f.Known {
		tag = " (a saved case that still fails)"
	}
	if f.Flaky {
		tag += " (flaky: it did not fail again when replayed)"
	}
	p("  failure %d%s, %s mode, worker %d after %s (shrunk in %s): %s", n, tag, f.Mode, f.Worker,
		Round(seconds(f.FoundAfterS)), Round(seconds(f.ShrinkS)), f.Verdict)
	if f.Trace != "" {
		switch f.Mode {
		case "sequential":
			p("    program (queue's answers):")
		case "stress":
			p("    the failing job's longest legal order, then the operation that cannot come next:")
		} // a scheduled trace heads its own parts: prefix, concurrent, interleaving
		p.indented(f.Trace)
	}
	if f.Model != "" {
		p("    model now: %s", f.Model)
	}
	if f.ReportDir != "" {
		p("    report: %s (%s, %s, %s)", f.ReportDir, report.TimelineFile, report.MeasuresFile, report.VerdictFile)
	}
	if f.ProgramFile != "" {
		p("    program: %s", f.ProgramFile)
		p("    go test: %s", f.ProgramCommand)
	}
	if f.FuzzFile != "" {
		p("    fuzz input: %s", f.FuzzFile)
		p("    go test:    %s", f.FuzzCommand)
	}
	if f.ReplayFile != "" {
		p("    saved:  %s", f.ReplayFile)
	}
	if f.ReplayCommand != "" {
		p("    replay: %s", f.ReplayCommand)
	}
}

// summaryVerdict is the last line.
func (r *Report) summaryVerdict(p printer) {
	switch r.Verdict {
	case VerdictHeld:
		if n := r.Counts.NotPromised; n > 0 {
			p("  verdict: every promised property held (not promised: %s observed)", num(n))
		} else {
			p("  verdict: every checked property held")
		}
	case VerdictViolated:
		p("  verdict: VIOLATED (%d failure(s))", len(r.Failures))
	default:
		p("  verdict: no verdict, the harness failed")
	}
}

// Write saves the report as DIR/run-<queue>-<start>.json with its summary next to it (.txt),
// and returns the JSON's path.
func (r *Report) Write(dir string) (string, error) {
	base := filepath.Join(dir, fmt.Sprintf("run-%s-%s", program.SafeName(r.Queue.Name), r.Started.Format("20060102-150405")))
	if st := r.Stress; st != nil && st.Page != "" {
		// The page sits beside the report, where the next campaign's rounds do not rewrite it.
		// A campaign run without a report folder has removed the round's folder by now.
		page := base + "-measures.html"
		b, err := os.ReadFile(st.Page)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			st.Page = ""
		case err == nil:
			if err := os.WriteFile(page, b, 0o644); err != nil {
				return "", fmt.Errorf("writing %s: %v; pass a writable report folder", page, PathCause(err))
			}
			st.Page = page
		default:
			return "", fmt.Errorf("reading the stress round's measures page: %v", PathCause(err))
		}
	}
	if err := WriteJSON(base+".json", r); err != nil {
		return "", err
	}
	var sum strings.Builder
	r.Summary(&sum)
	if err := os.WriteFile(base+".txt", []byte(sum.String()), 0o644); err != nil {
		return "", fmt.Errorf("writing %s.txt: %v; pass a writable report folder", base, PathCause(err))
	}
	return base + ".json", nil
}

// WriteJSON writes v as indented JSON, atomically.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %v; pass a writable path", path, PathCause(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %v; pass a writable path", path, PathCause(err))
	}
	return nil
}

// ReadReport loads a saved report. Format 1 reports (older pgqcheck) read as well: their fields
// are a subset, and their failures' property numbers read back as typed properties.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s cannot be read (%v); pass a report JSON written by pgqcheck run", path, PathCause(err))
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s is not a pgqcheck report (%v); pass a report JSON written by pgqcheck run", path, err)
	}
	if r.Format < 1 || r.Format > ReportFormat {
		return nil, fmt.Errorf("%s has report format %d, this pgqcheck reads formats 1 to %d; use the pgqcheck that wrote it", path, r.Format, ReportFormat)
	}
	for _, f := range r.Failures {
		f.PropertyName = f.Property.Name()
	}
	return &r, nil
}

// Merge combines shard reports of one queue into one. Properties, counts and failures are
// summed; each failure keeps its typed property.
func Merge(paths []string, rs []*Report) (*Report, error) {
	m := &Report{Format: ReportFormat, Tool: rs[0].Tool, Queue: rs[0].Queue, Mode: rs[0].Mode, Seed: rs[0].Seed, ReplayRoot: rs[0].ReplayRoot}
	var backends, versions, wheres, reasons []string
	checked := map[model.Property]bool{}
	for i, r := range rs {
		if r.Queue.Name != m.Queue.Name {
			return nil, fmt.Errorf("%s judged queue %s but %s judged %s; merge shards of one queue", paths[i], r.Queue.Name, paths[0], m.Queue.Name)
		}
		if i == 0 || r.Started.Before(m.Started) {
			m.Started = r.Started
		}
		if r.Finished.After(m.Finished) {
			m.Finished = r.Finished
		}
		if r.Mode != m.Mode {
			m.Mode = "mixed"
		}
		if r.Seed != m.Seed {
			m.Seed = 0
		}
		m.ElapsedS = max(m.ElapsedS, r.ElapsedS)
		m.Interrupted = m.Interrupted || r.Interrupted
		m.Workers += r.Workers
		m.Checks += r.Checks
		m.Ops += r.Ops
		m.Histories += r.Histories
		m.ShrinkRuns += r.ShrinkRuns
		m.ChecksPerS += r.ChecksPerS
		m.OpsPerS += r.OpsPerS
		m.Counts.Add(r.Counts)
		if r.Crashes != nil {
			if m.Crashes == nil {
				m.Crashes = &CrashTally{}
			}
			m.Crashes.merge(r.Crashes)
		}
		m.Failures = append(m.Failures, r.Failures...)
		for _, f := range r.NotPromisedEach {
			if !slices.ContainsFunc(m.NotPromisedEach, func(g *Failure) bool { return g.Property == f.Property }) {
				m.NotPromisedEach = append(m.NotPromisedEach, f)
			}
		}
		if m.NotPromised == nil {
			m.NotPromised = r.NotPromised
		}
		m.HarnessErrors = append(m.HarnessErrors, r.HarnessErrors...)
		if m.ClaimCost == nil {
			m.ClaimCost = r.ClaimCost // every shard measures the same queue the same way
		}
		if m.Stress == nil {
			m.Stress = r.Stress // a shape to look at, not a sum: the first shard's
		}
		backends = appendNew(backends, r.Backend)
		versions = appendNew(versions, r.ServerVersion)
		wheres = appendNew(wheres, r.Where)
		reasons = appendNew(reasons, r.StopReason)
		if m.Dest == "" {
			m.Dest = r.Dest
		}
		for _, ps := range r.Properties {
			if ps.Status != StatusNotChecked {
				checked[ps.Number] = true
			}
		}
		if len(r.Shards) > 0 {
			m.Shards = append(m.Shards, r.Shards...)
		} else {
			m.Shards = append(m.Shards, paths[i])
		}
	}
	m.Backend, m.ServerVersion, m.Where = strings.Join(backends, ", "), strings.Join(versions, ", "), strings.Join(wheres, "; ")
	m.StopReason = strings.Join(reasons, "; ")
	var on []model.Property
	for p := range checked {
		on = append(on, p)
	}
	sort.Slice(on, func(i, j int) bool { return on[i] < on[j] })
	m.fillProperties(on)
	if m.ClaimCost != nil {
		m.setClaimCost(m.ClaimCost)
	}
	m.decideVerdict()
	return m, nil
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Round rounds a duration for printing.
func Round(d time.Duration) time.Duration {
	switch {
	case d > time.Minute:
		return d.Round(time.Second)
	case d > time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// num prints an integer with thousands separators.
func num(n int64) string { return textfmt.Thousands(n) }
