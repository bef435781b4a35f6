package deploy

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy/observed"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
)

// checkTimeout bounds the linearizability check of a run's history.
const checkTimeout = 2 * time.Minute

// judge builds the history of everything the run's processes reported and checks it.
func (r *run) judge() error {
	if err := r.collect(); err != nil {
		return err
	}
	t := r.cfg.Target
	h := r.b.History(t.Source, t.Shape)
	h, r.res.Pending = r.spare(h)
	v := check.Check(h, checkTimeout)
	final := map[int64]model.Row{}
	for _, o := range h.Ops {
		if o.Input.Kind == model.OpObserve && o.Session == "snapshot" {
			final[o.Input.Job] = model.Row{ID: o.Input.Job, State: o.Output.State, Generation: o.Output.Gen, Attempts: o.Output.Attempts}
		}
	}
	ov := r.b.Check(observed.Rules{Shape: t.Shape, Lease: t.Lease, MaxAttempts: t.MaxAttempts, Final: final, Done: doneJobs(h, final)})
	for _, o := range r.b.History(t.Source, t.Shape).Ops {
		if o.Input.Kind == model.OpEnqueue && o.Output.Outcome == model.Returned {
			r.res.Enqueued++
		}
	}
	if v.Accounting != nil {
		for _, id := range v.Accounting.Lost {
			ov.LastSeen[id] = r.b.Where(id)
		}
	}
	r.res.History, r.res.Verdict, r.res.Observed = h, v, ov
	r.res.Executions, r.res.Effects = ov.Executions, ov.Effects
	r.res.FirstViolation = firstViolation(h, v, ov)
	return nil
}

// doneJobs are the jobs done when the run ended: done at the last snapshot, or gone from it
// where the queue deletes done jobs (after an acknowledged enqueue).
func doneJobs(h *history.History, final map[int64]model.Row) []int64 {
	var out []int64
	for _, o := range h.Ops {
		if o.Input.Kind != model.OpEnqueue || o.Output.Outcome != model.Returned {
			continue
		}
		row, seen := final[o.Output.Job]
		if seen && row.State == model.Done || !seen && h.Shape.DoneDeleted {
			out = append(out, o.Output.Job)
		}
	}
	return out
}

// spare leaves out of the history the jobs the queue still holds within its promise when the
// run ends: running at the last snapshot, their last execution begun less than the queue's
// lease (its rescue horizon) before it, so that no promise yet says they must have moved on (a
// worker killed with them in hand, under River's default hour). They are reported, not judged.
func (r *run) spare(h *history.History) (*history.History, []int64) {
	var snap time.Duration
	running := map[int64]bool{}
	for _, o := range h.Ops {
		if o.Input.Kind == model.OpObserve && o.Session == "snapshot" {
			snap = max(snap, o.Input.At.From)
			if o.Output.State == model.Running {
				running[o.Input.Job] = true
			}
		}
	}
	began := map[int64]time.Duration{}
	for _, e := range r.b.Executions() {
		if running[e.Job] {
			at := e.Claimed
			if at == 0 {
				at = e.Start
			}
			began[e.Job] = r.b.Since(time.UnixMicro(at))
		}
	}
	spared := map[int64]bool{}
	var out []int64
	for id := range running {
		if at, ok := began[id]; ok && at+r.cfg.Target.Lease > snap {
			spared[id] = true
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return h, nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	cut := *h
	cut.Ops = nil
	for _, o := range h.Ops {
		if id, named := model.JobOf(o.Input, o.Output); named && spared[id] {
			continue
		}
		cut.Ops = append(cut.Ops, o)
	}
	return &cut, out
}

// firstViolation is when, from the run's first reading, the run first broke a promise: the
// earliest of the observed findings and the time the failing job's history first showed its
// violation, or the run's end for one only the drain shows (-1: nothing broke).
func firstViolation(h *history.History, v *check.Conclusion, ov *observed.Verdict) time.Duration {
	first := time.Duration(-1)
	take := func(t time.Duration) {
		if first < 0 || t < first {
			first = t
		}
	}
	for _, f := range ov.Findings {
		take(f.At)
	}
	if v.OK {
		return first
	}
	job := v.Job
	if job == 0 && v.Accounting != nil {
		job = v.Accounting.FirstProblemJob()
	}
	if t, ok := observed.FirstViolation(h, job); job != 0 && ok {
		take(t)
		return first
	}
	var end int64
	for _, o := range h.Ops {
		if o.Return != history.Never {
			end = max(end, o.Return)
		}
	}
	take(time.Duration(end))
	return first
}

// Table is the run's verdict table: every property a deployment judges, and what became of it.
func (r *Result) Table() *verdict.Table {
	judged := Properties
	if r.external {
		judged = append(append([]model.Property(nil), Properties...), model.PExternal)
	}
	t := verdict.NewTable(r.judged(), judged...)
	var broken []*model.Violation
	if !r.Verdict.OK && r.Verdict.Violation != nil {
		broken = append(broken, r.Verdict.Violation)
	}
	broken = append(broken, r.History.Findings...)
	if a := r.Verdict.Accounting; a != nil {
		broken = append(broken, a.Problems...)
	}
	for _, f := range r.Observed.Findings {
		broken = append(broken, f.Violation)
	}
	for _, b := range broken {
		if !b.NotPromised {
			t.Violated[b.Property] = true
		}
	}
	if r.Verdict.Job != 0 {
		t.Violated[model.PLinearizable] = true
	}
	for _, np := range r.Verdict.NotPromised {
		t.NotPromised[np.Property]++
	}
	for _, f := range r.Observed.NotPromised {
		t.NotPromised[f.Violation.Property]++
	}
	return t
}

// TableText is the verdict table as a run prints it: the table every mode prints, where a
// property the queue's shape promises but the run measured as not promised (duplicate effects
// at a destination that applies every call) says so.
func (r *Result) TableText() string { return tableText(r.Table()) }

func tableText(t *verdict.Table) string {
	var b strings.Builder
	b.WriteString("property                    verdict\n")
	for _, p := range t.Judged {
		status := t.Status(p)
		if n := t.NotPromised[p]; n > 0 && !t.Violated[p] && t.Shape.Judged(p) && t.Shape.Promised(p) {
			status = fmt.Sprintf("not promised: %d observed", n)
		}
		fmt.Fprintf(&b, "%-3d %-23s %s\n", int(p), p.Name(), status)
	}
	return b.String()
}

// judged is the shape the verdict table reads what was judged from: the history's, with what
// the checks of observed executions judged on top (business effects where the queue counts
// them, run-at times where the workload gave some, attempts where the configuration limits
// them).
func (r *Result) judged() model.Shape {
	sh := r.History.Shape
	sh.Can.Effect = sh.Can.Effect || r.Effects >= 0 && !r.external
	sh.Can.Delay = sh.Can.Delay || r.scheduled
	sh.Can.Fail = sh.Can.Fail || r.maxAttempts > 0
	return sh
}

// Properties are what a deployment run judges.
var Properties = []model.Property{model.PFencing, model.PExclusion, model.PGenerations, model.PDoneOnce,
	model.PRecovery, model.PLinearizable, model.PDBTime, model.PNoErrors, model.PRetries, model.PScheduling,
	model.PDrain, model.PEffects}

// Summary is the run in a few lines: what was injected and observed, and the verdict.
func (r *Result) Summary(w io.Writer) {
	fmt.Fprintf(w, "deploy %s (seed %d): %s injected; %d jobs enqueued, %d executions observed, %s\n",
		r.Target, r.Seed, r.Schedule.Summary(), r.Enqueued, r.Executions, effectsText(r.Effects))
	switch {
	case r.OK():
		fmt.Fprintf(w, "held: %s\n", r.Verdict)
	default:
		fmt.Fprintf(w, "VIOLATED: %s\n", r.FirstText())
		if r.FirstViolation >= 0 {
			fmt.Fprintf(w, "first violation at %s from the run's start\n", model.Stamp(r.FirstViolation))
		}
	}
	if n := len(r.Pending); n > 0 {
		fmt.Fprintf(w, "not judged: %d jobs still held within the queue's horizon (%v) when the run ended, by workers a fault stalled or killed (jobs %v)\n",
			n, r.Lease, r.Pending)
	}
	var lost []int64
	for id := range r.Observed.LastSeen {
		lost = append(lost, id)
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i] < lost[j] })
	for _, id := range lost {
		fmt.Fprintf(w, "  lost: %s\n", r.Observed.LastSeen[id])
	}
	fmt.Fprintf(w, "report: %s\n", r.Dir)
}

// FirstText is the first violation, one line.
func (r *Result) FirstText() string {
	if len(r.Observed.Findings) > 0 && (r.Verdict.OK || r.Verdict.Violation == nil) {
		return r.Observed.Findings[0].Violation.Error()
	}
	return strings.TrimPrefix(r.Verdict.String(), "FAIL: ")
}

func effectsText(n int64) string {
	if n < 0 {
		return "no business effects counted"
	}
	return fmt.Sprintf("%d business effects counted", n)
}

// write writes the report folder: the history, verdict and timeline every concurrent mode
// writes, and what only a deployment has: the run (target, seed, schedule) that a replay
// reads, the workload, each process's events and output, and the observed executions.
func (r *run) write() error {
	if err := report.Write(r.report, r.res.History, r.res.Verdict); err != nil {
		return err
	}
	if err := saveJSON(filepath.Join(r.report, RunFile), r.spec()); err != nil {
		return err
	}
	if err := saveJSON(filepath.Join(r.report, "executions.json"), r.b.Executions()); err != nil {
		return err
	}
	for _, sub := range []string{"events", "logs"} {
		if err := os.MkdirAll(filepath.Join(r.report, sub), 0o755); err != nil {
			return err
		}
	}
	for _, l := range r.lives {
		for from, to := range map[string]string{l.events: filepath.Join(r.report, "events", filepath.Base(l.events)), l.out: filepath.Join(r.report, "logs", filepath.Base(l.out))} {
			if b, err := os.ReadFile(from); err == nil {
				if err := os.WriteFile(to, b, 0o644); err != nil {
					return err
				}
			}
		}
	}
	var b strings.Builder
	r.res.Summary(&b)
	b.WriteString("\n")
	b.WriteString(r.res.TableText())
	for _, f := range r.res.Observed.Findings {
		fmt.Fprintf(&b, "\nobserved: %s (at %s)\n", f.Violation.Error(), model.Stamp(f.At))
	}
	for _, f := range r.res.Observed.NotPromised {
		fmt.Fprintf(&b, "\nobserved, not promised: %s (at %s)\n", f.Violation.Error(), model.Stamp(f.At))
	}
	return os.WriteFile(filepath.Join(r.report, DeployFile), []byte(b.String()), 0o644)
}

// Files of a deployment's report folder, beside the concurrent modes' own.
const (
	RunFile    = "run.json"   // the run: what a replay runs again
	DeployFile = "deploy.txt" // the run's summary and verdict table
)
