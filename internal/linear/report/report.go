package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// Files in a report folder.
const (
	HistoryFile  = "history.json"  // the whole history
	JobFile      = "job.json"      // the failing job's operations alone, itself a checkable history
	TimelineFile = "timeline.html" // porcupine's timeline of the failing job
	VerdictFile  = "verdict.txt"   // the verdict, the explanation, and how to re-check
	// FuzzInputFile is a scheduled run's choices as a FuzzScheduled corpus file: the same
	// run replayed by `go test ./fuzz` once copied into fuzz/testdata/fuzz/FuzzScheduled/.
	FuzzInputFile = "fuzz-input"
	// ProgramFile is a scheduled run as a program whose lines are its interleaving: what
	// `pgqcheck replay` and TestPropPrograms run again.
	ProgramFile = "program.ops"
)

// EnvHistory names the variable that makes `go test -run TestLinearHistories .` re-check one
// saved history instead of the ones under testdata/histories.
const EnvHistory = "PGQCHECK_HISTORY"

// NewDir creates a fresh report folder under root (os.TempDir() when empty).
func NewDir(root, name string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	return os.MkdirTemp(root, "pgqcheck-linear-"+program.SafeName(name)+"-")
}

// FixedDir empties and returns a report folder whose path depends on name alone, for
// runs that must print the same text each time they fail (rapid compares failure messages
// while it shrinks, and the last run to fail is the shrunk one, whose report is kept).
func FixedDir(root, name string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	dir := filepath.Join(root, "pgqcheck-linear-"+program.SafeName(name))
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// Write writes a verdict's report folder: the history, the measures page of the whole
// run (throughput, latency and fault windows over time, and the seed's measures) with its
// JSON, and a verdict with the commands that re-check the history. A failing verdict adds the
// failing job's operations and porcupine's timeline of that job alone (a whole history's
// timeline can run to gigabytes).
func Write(dir string, h *history.History, v *check.Conclusion) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := h.Save(filepath.Join(dir, HistoryFile)); err != nil {
		return err
	}
	if _, err := writeMeasures(dir, h); err != nil {
		return err
	}
	job := v.Job
	if job == 0 && v.Accounting != nil {
		job = v.Accounting.FirstProblemJob()
	}
	files := []string{MeasuresFile, MeasuresJSONFile}
	if job != 0 {
		cut := CutToJob(h, job)
		if err := cut.Save(filepath.Join(dir, JobFile)); err != nil {
			return err
		}
		if err := Timeline(cut, filepath.Join(dir, TimelineFile)); err != nil {
			return err
		}
		files = append(files, JobFile, TimelineFile)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nqueue: %s\nmode: %s\n", v, h.Queue, h.Mode)
	if h.Program != "" {
		fmt.Fprintf(&b, "run: %s\n", strings.TrimSpace(h.Program))
	}
	fmt.Fprintf(&b, "%s\n", check.CountOps(h))
	if len(v.Problems) > 0 {
		b.WriteString("\nproblems:\n")
		for _, p := range v.Problems {
			fmt.Fprintf(&b, "  - %s\n", p)
		}
	}
	if v.Explanation != "" {
		fmt.Fprintf(&b, "\n%s", v.Explanation)
	}
	fmt.Fprintf(&b, "\nfiles: %s\n", strings.Join(append([]string{HistoryFile}, files...), ", "))
	fmt.Fprintf(&b, "\nre-check the history:\n  %s\n", RecheckCommand(filepath.Join(dir, HistoryFile)))
	return os.WriteFile(filepath.Join(dir, VerdictFile), []byte(b.String()), 0o644)
}

// RecheckCommand is the command that re-checks a saved history, run from the module root.
func RecheckCommand(path string) string {
	return fmt.Sprintf("%s=%s go test -run 'TestLinearHistories$' .   (or: pgqcheck check-history %s)", EnvHistory, path, path)
}

// CutToJob returns the sub-history one job's check reads: its own operations, and the
// operations that name no job but may have touched it (unknown claims and enqueues, strict
// empty claims). Checking the cut decides that job exactly as checking the whole history does.
// Row locks on the job are kept for the timeline.
func CutToJob(h *history.History, job int64) *history.History {
	cut := *h
	cut.Ops = nil
	cut.Drained = false
	cut.Findings = nil
	cut.Expect = ""
	cut.Program = strings.TrimSpace(h.Program + fmt.Sprintf("\n(cut to job %d)", job))
	sessions := map[string]bool{}
	from, to := int64(history.Never), int64(0) // the job's active span: faults outside it are noise
	for _, o := range h.Ops {
		f := model.FactsOf(o.Input, o.Output)
		id, named := f.Job, f.Named
		if (named && id == job) || (!named && !model.Ignored(o.Input, o.Output)) || ((f.Locks || f.Unlocks) && f.Job == job) {
			cut.Ops = append(cut.Ops, o)
			sessions[o.Session] = true
		}
		if named && id == job {
			from = min(from, o.Call)
			if o.Return != history.Never && !f.Observes {
				to = max(to, o.Return)
			}
		}
	}
	cut.Faults = nil
	for _, f := range h.Faults {
		// A crash and its restart befall every job.
		if (sessions[f.Target] || f.Target == history.CrashTarget) && f.At >= from && f.At <= to {
			cut.Faults = append(cut.Faults, f)
		}
	}
	return &cut
}

// CheckFile re-checks a saved history and, when htmlOut is not empty, writes a timeline: of
// the failing job when the check fails, else of the whole history (when it is small enough
// to draw). It is what `pgqcheck check-history FILE` runs.
func CheckFile(path, htmlOut string) (*check.Conclusion, error) {
	h, err := history.Load(path)
	if err != nil {
		return nil, err
	}
	v := check.Check(h, 5*time.Minute)
	if htmlOut == "" {
		return v, nil
	}
	job := v.Job
	if job == 0 && v.Accounting != nil && !v.OK {
		job = v.Accounting.FirstProblemJob()
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
