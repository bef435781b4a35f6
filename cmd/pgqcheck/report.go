package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"pgqcheck/internal/textfmt"
	"pgqcheck/linear"
	"pgqcheck/model"
	"pgqcheck/plan"
)

// reportFormat changes when a field changes meaning; readers refuse formats they do not know.
const reportFormat = 1

// Report is a campaign's result: where it ran, what it exercised, what held and what failed,
// and how to replay each failure.
type Report struct {
	Format        int          `json:"format"`
	Tool          string       `json:"tool"`
	Started       time.Time    `json:"started"`
	Finished      time.Time    `json:"finished"`
	ElapsedS      float64      `json:"elapsed_s"`
	Requested     string       `json:"requested_duration,omitempty"`
	StopReason    string       `json:"stop_reason"`
	Interrupted   bool         `json:"interrupted,omitempty"`
	Backend       string       `json:"backend"`
	ServerVersion string       `json:"server_version"`
	Where         string       `json:"where"`
	Queue         QueueInfo    `json:"queue"`
	Mode          string       `json:"mode"`
	Workers       int          `json:"workers"`
	Seed          uint64       `json:"seed"`
	ReplayRoot    string       `json:"replay_root"`
	Checks        int64        `json:"checks"`
	Ops           int64        `json:"ops"`
	Histories     int64        `json:"histories"`
	ShrinkRuns    int64        `json:"shrink_runs"`
	ChecksPerS    float64      `json:"checks_per_s"`
	OpsPerS       float64      `json:"ops_per_s"`
	Counts        Counts       `json:"counts"`
	Properties    []*PropStat  `json:"properties"`
	Failures      []*Failure   `json:"failures"`
	HarnessErrors []string     `json:"harness_errors,omitempty"`
	ClaimCost     *plan.Report `json:"claim_cost,omitempty"` // property 10, when measured
	Verdict       string       `json:"verdict"`              // held, violated, error
	Shards        []string     `json:"shards,omitempty"`
}

// Verdicts.
const (
	verdictHeld     = "held"
	verdictViolated = "violated"
	verdictError    = "error"
)

// QueueInfo names the queue a report judged.
type QueueInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Dir    string `json:"dir,omitempty"` // absolute folder; empty for a built-in
	Order  string `json:"claim_order"`
}

// PropStat is one property's outcome in a run.
type PropStat struct {
	Number      int    `json:"number"`
	Name        string `json:"name"`
	Status      string `json:"status"` // held, violated, not checked
	Failures    int    `json:"failures"`
	Exercised   int64  `json:"exercised"`
	ExercisedBy string `json:"exercised_by"`
}

// Property statuses.
const (
	statusHeld       = "held"
	statusViolated   = "violated"
	statusNotChecked = "not checked"
)

// Failure is one violation found, with what replays it.
type Failure struct {
	Property     int     `json:"property"` // -1 when the verdict names none
	PropertyName string  `json:"property_name,omitempty"`
	Verdict      string  `json:"verdict"`
	Output       string  `json:"output"`
	Mode         string  `json:"mode"`
	Worker       int     `json:"worker"`
	Round        int     `json:"round"`
	Seed         uint64  `json:"seed,omitempty"` // the failing run's rapid seed
	FoundAfterS  float64 `json:"found_after_s"`  // since the campaign started
	// ReplayFile is rapid's fail file (sequential, scheduled) or the saved history (stress);
	// the command replays it. ProgramFile is the reduced program TestPropPrograms replays;
	// FuzzFile, a scheduled failure's FuzzScheduled corpus entry.
	ReplayFile     string  `json:"replay_file,omitempty"`
	ReplayCommand  string  `json:"replay_command,omitempty"`
	ProgramFile    string  `json:"program_file,omitempty"`
	ProgramCommand string  `json:"program_command,omitempty"`
	FuzzFile       string  `json:"fuzz_file,omitempty"`
	FuzzCommand    string  `json:"fuzz_command,omitempty"`
	ReportDir      string  `json:"report_dir,omitempty"` // concurrent modes: the history, the failing job's timeline, the verdict
	ShrinkS        float64 `json:"shrink_s"`             // spent minimising it after it was found
	Known          bool    `json:"known,omitempty"`      // a case saved earlier that still fails
	Flaky          bool    `json:"flaky,omitempty"`      // rapid could not reproduce it

	foundAt time.Time // when the first failing run ended
}

var verdictRE = regexp.MustCompile(`^property (\d+) \(([^)]*)\)`)

// classify fills the property from the verdict line.
func (f *Failure) classify() {
	f.Property = -1
	if m := verdictRE.FindStringSubmatch(f.Verdict); m != nil {
		f.Property, _ = strconv.Atoi(m[1])
		f.PropertyName = m[2]
	}
	f.Flaky = strings.Contains(f.Output, "flaky test, can not reproduce")
}

// allProperties are the design's properties, in order. 10 (claim cost) is a measurement, made
// after the campaign (--plan-sizes): it flags a claim whose cost grows with done rows, and is
// reported, not counted as a violation (timings on shared machines are not verdicts).
var allProperties = []model.Property{model.PClaimOrder, model.PFencing, model.PExclusion, model.PGenerations,
	model.PDoneOnce, model.PSkipLocked, model.PRecovery, model.PLinearizable, model.PDBTime, model.PNoErrors, model.PClaimCost}

func propertyName(p model.Property) string {
	if p == 10 {
		return "claim cost"
	}
	return model.PropertyName(p)
}

// exercised says how often a run gave a property something to check.
func exercised(p model.Property, r *Report) (int64, string) {
	c := r.Counts
	switch p {
	case model.PClaimOrder, model.PExclusion, model.PGenerations:
		return c.Claims, "claims that returned a job"
	case model.PFencing:
		return c.Completions + c.RejectedCompletions, fmt.Sprintf("completions (%d refused, %d with an older token)", c.RejectedCompletions, c.StaleTokenCompletion)
	case model.PDoneOnce:
		return c.Completions + c.DrainedJobs, fmt.Sprintf("jobs completed (%d by drains)", c.DrainedJobs)
	case model.PSkipLocked:
		return c.Locks, fmt.Sprintf("row locks held by lockers (%d released, %d cancelled, %d terminated)", c.Releases, c.Cancels, c.Terminates)
	case model.PRecovery:
		return c.Expiries + c.Pauses + c.Drains, fmt.Sprintf("expiries, pauses past a lease and drains (%d jobs drained, %d empty claims)", c.DrainedJobs, c.EmptyClaims)
	case model.PLinearizable:
		return r.Histories, "concurrent histories checked"
	case model.PDBTime, model.PNoErrors:
		return r.Ops, "operations run and checked"
	}
	return 0, "measured by a separate benchmark, not by run"
}

// fillProperties computes each property's status from the failures and the mode's coverage.
func (r *Report) fillProperties(checked []model.Property) {
	on := map[model.Property]bool{}
	for _, p := range checked {
		on[p] = true
	}
	r.Properties = nil
	for _, p := range allProperties {
		ps := &PropStat{Number: int(p), Name: propertyName(p), Status: statusNotChecked}
		if on[p] && r.Checks+r.Histories > 0 {
			ps.Status = statusHeld
		}
		for _, f := range r.Failures {
			if f.Property == int(p) {
				ps.Failures++
				ps.Status = statusViolated
			}
		}
		ps.Exercised, ps.ExercisedBy = exercised(p, r)
		r.Properties = append(r.Properties, ps)
	}
}

// Property 10's statuses.
const (
	statusFlat  = "flat"
	statusGrows = "GROWS"
)

// setClaimCost records property 10's measurement.
func (r *Report) setClaimCost(c *plan.Report) {
	r.ClaimCost = c
	for _, ps := range r.Properties {
		if ps.Number != 10 || !c.Measurable {
			continue
		}
		ps.Status, ps.Exercised, ps.ExercisedBy = statusFlat, int64(len(c.Rows)), "states measured with EXPLAIN (ANALYZE, BUFFERS)"
		if c.Grows {
			ps.Status = statusGrows
		}
	}
}

// decideVerdict sets the verdict from failures and harness errors.
func (r *Report) decideVerdict() {
	switch {
	case len(r.Failures) > 0:
		r.Verdict = verdictViolated
	case len(r.HarnessErrors) > 0:
		r.Verdict = verdictError
	default:
		r.Verdict = verdictHeld
	}
}

// Summary writes the short human summary of a report.
func (r *Report) Summary(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("pgqcheck run: queue %s (%s), %s backend, PostgreSQL %s", r.Queue.Name, r.Queue.Source, r.Backend, firstWord(r.ServerVersion))
	if len(r.Shards) > 0 {
		p("  merged from %d shard reports: %s", len(r.Shards), strings.Join(r.Shards, ", "))
	}
	p("  %s in %s mode with %d worker(s), seed %d; stopped: %s", round(time.Duration(r.ElapsedS*float64(time.Second))), r.Mode, r.Workers, r.Seed, r.StopReason)
	p("  %s checks (%.0f/s), %s operations (%.0f/s), %s histories, %s shrink runs",
		num(r.Checks), r.ChecksPerS, num(r.Ops), r.OpsPerS, num(r.Histories), num(r.ShrinkRuns))
	c := r.Counts
	p("  claims %s (+%s empty), completions %s accepted / %s refused (%s with an older token), expiries %s, pauses %s, locks %s, drains %s",
		num(c.Claims), num(c.EmptyClaims), num(c.Completions), num(c.RejectedCompletions), num(c.StaleTokenCompletion), num(c.Expiries), num(c.Pauses), num(c.Locks), num(c.Drains))
	if c.ClaimWaits > 0 {
		p("  observed: %s claim(s) waited behind a row lock the stress chaos injected (exempt as an injected fault; Prop and scheduled mode judge skip-don't-wait strictly)", num(c.ClaimWaits))
	}
	p("  properties:")
	for _, ps := range r.Properties {
		extra := ""
		if ps.Failures > 0 {
			extra = fmt.Sprintf(", %d failure(s)", ps.Failures)
		}
		p("    %-11s %2d %-22s %s %s%s", ps.Status, ps.Number, ps.Name, num(ps.Exercised), ps.ExercisedBy, extra)
	}
	if c := r.ClaimCost; c != nil {
		p("  claim cost: %s", c.Verdict)
		if c.Measurable {
			for _, l := range strings.Split(strings.TrimRight(c.Summary(), "\n"), "\n") {
				p("    %s", l)
			}
		}
	}
	for i, f := range r.Failures {
		tag := ""
		if f.Known {
			tag = " (a saved case that still fails)"
		}
		if f.Flaky {
			tag += " (flaky: rapid could not reproduce it)"
		}
		p("  failure %d%s, worker %d after %s (shrunk in %s): %s", i+1, tag, f.Worker,
			round(time.Duration(f.FoundAfterS*float64(time.Second))), round(time.Duration(f.ShrinkS*float64(time.Second))), f.Verdict)
		for _, l := range shrunkProgram(f.Output) {
			p("    %s", l)
		}
		if f.ReportDir != "" {
			p("    report: %s (%s, %s)", f.ReportDir, linear.ReportTimeline, linear.ReportVerdict)
		}
		if f.ReplayFile != "" {
			p("    saved:  %s", f.ReplayFile)
		}
		if f.ReplayCommand != "" {
			p("    replay: %s", f.ReplayCommand)
		}
		if f.ProgramFile != "" {
			p("    program: %s", f.ProgramFile)
			p("    replay:  %s", f.ProgramCommand)
		}
		if f.FuzzFile != "" {
			p("    fuzz input: %s", f.FuzzFile)
			p("    replay:     %s", f.FuzzCommand)
		}
	}
	for _, e := range r.HarnessErrors {
		p("  harness error: %s", e)
	}
	switch r.Verdict {
	case verdictHeld:
		p("  verdict: every checked property held")
	case verdictViolated:
		p("  verdict: VIOLATED (%d failure(s))", len(r.Failures))
	default:
		p("  verdict: no verdict, the harness failed")
	}
}

// shrunkProgram picks the numbered program and the model's final state out of a failure's
// output (program.Report's layout).
func shrunkProgram(out string) []string {
	var (
		lines  []string
		indent = -1 // the header's indentation, stripped from the lines that follow
		sched  bool
	)
	for _, l := range strings.Split(out, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case indent < 0 && (strings.HasPrefix(t, "program (queue's answers):") || strings.HasPrefix(t, "prefix (one at a time):")):
			indent = len(l) - len(strings.TrimLeft(l, " \t"))
			sched = strings.HasPrefix(t, "prefix")
			lines = append(lines, t)
		case indent < 0:
		case !sched && strings.HasPrefix(t, "model now:"):
			return append(lines, t)
		case sched && t == "": // the interleaving ends the scheduled program
			return lines
		default:
			lines = append(lines, strings.TrimRight(l[min(indent, len(l)-len(strings.TrimLeft(l, " \t"))):], " "))
		}
	}
	return nil
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

func round(d time.Duration) time.Duration {
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

// readReport loads a saved report.
func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("report: %s cannot be read (%v); pass a report JSON written by pgqcheck run", path, unwrapPath(err))
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, usageErrorf("report: %s is not a pgqcheck report (%v); pass a report JSON written by pgqcheck run", path, err)
	}
	if r.Format != reportFormat {
		return nil, usageErrorf("report: %s has report format %d, this pgqcheck reads format %d; use the pgqcheck that wrote it", path, r.Format, reportFormat)
	}
	return &r, nil
}

// merge combines shard reports of one queue into one.
func merge(paths []string, rs []*Report) (*Report, error) {
	m := &Report{Format: reportFormat, Tool: rs[0].Tool, Queue: rs[0].Queue, Mode: rs[0].Mode, Seed: rs[0].Seed, ReplayRoot: rs[0].ReplayRoot}
	var backends, versions, wheres, reasons []string
	checked := map[int]bool{}
	for i, r := range rs {
		if r.Queue.Name != m.Queue.Name {
			return nil, usageErrorf("report: %s judged queue %s but %s judged %s; merge shards of one queue", paths[i], r.Queue.Name, paths[0], m.Queue.Name)
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
		m.Failures = append(m.Failures, r.Failures...)
		m.HarnessErrors = append(m.HarnessErrors, r.HarnessErrors...)
		if m.ClaimCost == nil {
			m.ClaimCost = r.ClaimCost // every shard measures the same queue the same way
		}
		backends = appendNew(backends, r.Backend)
		versions = appendNew(versions, r.ServerVersion)
		wheres = appendNew(wheres, r.Where)
		reasons = appendNew(reasons, r.StopReason)
		for _, ps := range r.Properties {
			if ps.Status != statusNotChecked {
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
		on = append(on, model.Property(p))
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

func init() {
	commandDetails["report"] = `pgqcheck run writes a JSON report and its summary (.txt) into its --report folder.
"pgqcheck report FILE..." prints the summary of each saved report; the exit status is 1 if any
of them found a violation. "pgqcheck report -merge OUT.json A.json B.json ..." merges shard
reports of one queue (campaigns run on several machines) into OUT.json and prints its summary.
`
}

func runReport(c *cli, args []string) error {
	fs := c.flags("report")
	out := fs.String("merge", "", "merge the given reports into this file")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("report: no report given; pass one or more report JSON files (pgqcheck report -h)")
	}
	var rs []*Report
	for _, p := range pos {
		r, err := readReport(p)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	if *out != "" {
		path, err := writableFile("report", "-merge", *out)
		if err != nil {
			return err
		}
		m, err := merge(pos, rs)
		if err != nil {
			return err
		}
		if err := writeJSON(path, m); err != nil {
			return err
		}
		m.Summary(c.stdout)
		fmt.Fprintf(c.stdout, "merged report: %s\n", path)
		rs = []*Report{m}
	} else {
		for i, r := range rs {
			if i > 0 {
				fmt.Fprintln(c.stdout)
			}
			fmt.Fprintf(c.stdout, "%s:\n", pos[i])
			r.Summary(c.stdout)
		}
	}
	worst := verdictHeld
	for _, r := range rs {
		switch {
		case r.Verdict == verdictViolated:
			worst = verdictViolated
		case r.Verdict == verdictError && worst == verdictHeld:
			worst = verdictError
		}
	}
	switch worst {
	case verdictViolated:
		return &violation{}
	case verdictError:
		return &exitErr{exitError, "pgqcheck: report: a run ended in a harness error, so it has no verdict; rerun it"}
	}
	return nil
}
