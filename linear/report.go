package linear

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"pgqcheck/model"
	"pgqcheck/program"
)

// Files in a report folder.
const (
	ReportHistory  = "history.json"  // the whole history
	ReportJob      = "job.json"      // the failing job's operations alone, itself a checkable history
	ReportTimeline = "timeline.html" // porcupine's timeline of the failing job
	ReportVerdict  = "verdict.txt"   // the verdict, the explanation, and how to re-check
	// ReportFuzzInput is a scheduled run's choices as a FuzzScheduled corpus file: the same
	// run replayed by `go test ./fuzz` once copied into fuzz/testdata/fuzz/FuzzScheduled/.
	ReportFuzzInput = "fuzz-input"
	// ReportProgram is a scheduled run as a program whose lines are its interleaving: what
	// `pgqcheck replay` and TestPropPrograms run again.
	ReportProgram = "program.ops"
)

// EnvHistory names the variable that makes `go test -run TestLinearHistories .` re-check one
// saved history instead of the ones under testdata/histories.
const EnvHistory = "PGQCHECK_HISTORY"

// NewReportDir creates a fresh report folder under root (os.TempDir() when empty).
func NewReportDir(root, name string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	return os.MkdirTemp(root, "pgqcheck-linear-"+program.SafeName(name)+"-")
}

// FixedReportDir empties and returns a report folder whose path depends on name alone, for
// runs that must print the same text each time they fail (rapid compares failure messages
// while it shrinks, and the last run to fail is the shrunk one, whose report is kept).
func FixedReportDir(root, name string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	dir := filepath.Join(root, "pgqcheck-linear-"+program.SafeName(name))
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// WriteReport writes a verdict's report folder: the history, the measures page of the whole
// run (throughput, latency and fault windows over time, and the seed's measures) with its
// JSON, and a verdict with the commands that re-check the history. A failing verdict adds the
// failing job's operations and porcupine's timeline of that job alone (a whole history's
// timeline can run to gigabytes).
func WriteReport(dir string, h *History, v *Verdict) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := h.Save(filepath.Join(dir, ReportHistory)); err != nil {
		return err
	}
	if _, err := writeMeasures(dir, h); err != nil {
		return err
	}
	job := v.Job
	if job == 0 && v.Accounting != nil {
		job = firstJob(v.Accounting)
	}
	files := []string{ReportMeasures, ReportMeasuresJSON}
	if job != 0 {
		cut := CutToJob(h, job)
		if err := cut.Save(filepath.Join(dir, ReportJob)); err != nil {
			return err
		}
		if err := Timeline(cut, filepath.Join(dir, ReportTimeline)); err != nil {
			return err
		}
		files = append(files, ReportJob, ReportTimeline)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nqueue: %s\nmode: %s\n", v, h.Queue, h.Mode)
	if h.Program != "" {
		fmt.Fprintf(&b, "run: %s\n", strings.TrimSpace(h.Program))
	}
	fmt.Fprintf(&b, "%s\n", CountOps(h))
	if len(v.Problems) > 0 {
		b.WriteString("\nproblems:\n")
		for _, p := range v.Problems {
			fmt.Fprintf(&b, "  - %s\n", p)
		}
	}
	if v.Explanation != "" {
		fmt.Fprintf(&b, "\n%s", v.Explanation)
	}
	fmt.Fprintf(&b, "\nfiles: %s\n", strings.Join(append([]string{ReportHistory}, files...), ", "))
	fmt.Fprintf(&b, "\nre-check the history:\n  %s\n", RecheckCommand(filepath.Join(dir, ReportHistory)))
	return os.WriteFile(filepath.Join(dir, ReportVerdict), []byte(b.String()), 0o644)
}

// RecheckCommand is the command that re-checks a saved history, run from the module root.
func RecheckCommand(path string) string {
	return fmt.Sprintf("%s=%s go test -run 'TestLinearHistories$' .   (or: pgqcheck check-history %s)", EnvHistory, path, path)
}

func firstJob(a *Accounting) int64 {
	for _, l := range [][]int64{a.Stale, a.Duplicated, a.Lost, a.Unexpected} {
		if len(l) > 0 {
			return l[0]
		}
	}
	return 0
}

// CutToJob returns the sub-history one job's check reads: its own operations, and the
// operations that name no job but may have touched it (unknown claims and enqueues, strict
// empty claims). Checking the cut decides that job exactly as checking the whole history does.
// Row locks on the job are kept for the timeline.
func CutToJob(h *History, job int64) *History {
	cut := *h
	cut.Ops = nil
	cut.Drained = false
	cut.Findings = nil
	cut.Expect = ""
	cut.Program = strings.TrimSpace(h.Program + fmt.Sprintf("\n(cut to job %d)", job))
	sessions := map[string]bool{}
	from, to := int64(Never), int64(0) // the job's active span: faults outside it are noise
	for _, o := range h.Ops {
		id, named := model.JobOf(o.Input, o.Output)
		lock := o.Input.Kind == model.OpLock || o.Input.Kind == model.OpUnlock
		if (named && id == job) || (!named && !model.Ignored(o.Input, o.Output)) || (lock && o.Input.Job == job) {
			cut.Ops = append(cut.Ops, o)
			sessions[o.Session] = true
		}
		if named && id == job {
			from = min(from, o.Call)
			if o.Return != Never && o.Input.Kind != model.OpObserve {
				to = max(to, o.Return)
			}
		}
	}
	cut.Faults = nil
	for _, f := range h.Faults {
		// A crash and its restart befall every job.
		if (sessions[f.Target] || f.Target == CrashTarget) && f.At >= from && f.At <= to {
			cut.Faults = append(cut.Faults, f)
		}
	}
	return &cut
}

// Timeline writes porcupine's HTML timeline of a history (meant for one job's cut): clients
// renumbered densely in order of appearance, row locks held and faults shown as annotations.
func Timeline(h *History, path string) error {
	m := partitionModel(h.Shape)
	ops := h.Porcupine()
	dense := map[int]int{}
	bySession := map[string]int{}
	order := make([]int, len(ops))
	for i := range ops {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ops[order[a]].Call < ops[order[b]].Call })
	for _, i := range order {
		c := ops[i].ClientId
		if _, ok := dense[c]; !ok {
			dense[c] = len(dense)
		}
		ops[i].ClientId = dense[c]
		bySession[h.Ops[i].Session] = dense[c]
	}
	var checked []porcupine.Operation
	for _, o := range ops {
		k := o.Input.(model.Input).Kind
		if k != model.OpLock && k != model.OpUnlock {
			checked = append(checked, o)
		}
	}
	parts := model.PartitionByJob(checked)
	if len(parts) == 0 {
		parts = [][]porcupine.Operation{{}}
	}
	var all []porcupine.Operation
	for _, p := range parts {
		all = append(all, p...)
	}
	m.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	_, info := porcupine.CheckOperationsVerbose(m, all, time.Minute)
	info.AddAnnotations(annotations(h, bySession))
	return porcupine.VisualizePath(m, info, path)
}

func annotations(h *History, bySession map[string]int) []porcupine.Annotation {
	var out []porcupine.Annotation
	held := map[string]Op{}
	for _, o := range h.Ops {
		switch o.Input.Kind {
		case model.OpLock:
			held[o.Session] = o
		case model.OpUnlock:
			if l, ok := held[o.Session]; ok {
				end := o.Return
				desc := fmt.Sprintf("%s holds job %d's row lock", o.Session, o.Input.Job)
				if end == Never {
					end = o.Call
					desc += " (released at an unknown time)"
				}
				out = append(out, porcupine.Annotation{Tag: "row locks", Start: l.Call, End: end, Description: desc, BackgroundColor: "#f3e0b5"})
				delete(held, o.Session)
			}
		}
	}
	for _, f := range h.Faults {
		a := porcupine.Annotation{Tag: "faults", Start: f.At, Description: f.Kind + " " + f.Target, BackgroundColor: "#f4b6b6"}
		if c, ok := bySession[f.Target]; ok {
			a.Tag, a.ClientId = "", c
		}
		out = append(out, a)
	}
	return out
}

// CheckFile re-checks a saved history and, when htmlOut is not empty, writes a timeline: of
// the failing job when the check fails, else of the whole history (when it is small enough
// to draw). It is what `pgqcheck check-history FILE` runs.
func CheckFile(path, htmlOut string) (*Verdict, error) {
	h, err := Load(path)
	if err != nil {
		return nil, err
	}
	v := Check(h, 5*time.Minute)
	if htmlOut == "" {
		return v, nil
	}
	job := v.Job
	if job == 0 && v.Accounting != nil && !v.OK {
		job = firstJob(v.Accounting)
	}
	switch {
	case job != 0:
		err = Timeline(CutToJob(h, job), htmlOut)
	case len(h.Ops) <= 5000:
		err = Timeline(h, htmlOut)
	default:
		err = fmt.Errorf("%d operations are too many for one timeline; the check passed", len(h.Ops))
	}
	return v, err
}
