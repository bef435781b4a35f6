package schedule

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
)

// failWith ends the run with a broken promise seen directly.
func (r *scheduledRun) failWith(v *model.Violation) {
	h := r.rec.History(r.scheduler.in.Queue.Source, "scheduled")
	h.Shape = r.scheduler.in.Queue.Shape()
	h.Program = r.listing()
	h.Findings = append(h.Findings, v)
	r.fail(v, &check.Conclusion{Violation: v, Problems: []string{v.Error()}}, h)
}

// harnessFailed ends the run with a failure of the suite's own machinery.
func (r *scheduledRun) harnessFailed(err error) {
	r.scheduler.last = nil // the harness failed, not the queue
	r.t.Fatalf("harness: %s\n%s", textfmt.OneLine(record.ErrorText(err)), r.listing())
}

// fail writes the report and stops the run. Each property fails from its own line, so that
// rapid's shrinker, which keeps only candidates that fail with the same stack, shrinks toward
// the same broken promise.
func (r *scheduledRun) fail(v *model.Violation, checked *check.Conclusion, h *history.History) {
	r.t.Helper()
	f := &verdict.Finding{Violation: v, Queue: r.scheduler.in.Queue.Name, Source: r.scheduler.in.Queue.Source, Mode: program.Scheduled,
		Program: r.asProgram(v), Trace: r.listing()}
	if v == nil {
		f.Violation = model.Violate(model.PLinearizable, "%s", checked)
	}
	if r.choices != nil {
		f.FuzzInput = append([]byte(nil), r.choices.log().bytes...)
	}
	dir, err := report.FixedDir(r.scheduler.cfg.ReportDir, "scheduled-"+r.scheduler.cfg.Name)
	if err == nil {
		err = report.Write(dir, h, checked)
	}
	if err == nil {
		err = f.Program.WriteFile(filepath.Join(dir, report.ProgramFile))
	}
	if err == nil && f.FuzzInput != nil {
		err = os.WriteFile(filepath.Join(dir, report.FuzzInputFile), CorpusFile(f.FuzzInput), 0o644)
	}
	var b strings.Builder
	b.WriteString(f.String())
	if checked.Explanation != "" {
		b.WriteString(checked.Explanation)
	}
	if err != nil {
		fmt.Fprintf(&b, "(no report: %s)\n", textfmt.OneLine(err.Error()))
	} else {
		f.ReportDir = dir
		fmt.Fprintf(&b, "report: %s (the program replays with: pgqcheck replay %s)\n", dir, filepath.Join(dir, report.ProgramFile))
	}
	r.scheduler.last = f
	r.scheduler.trace = f.Trace
	if r.choices != nil {
		r.scheduler.lastMarks = r.choices.log().marks
	}
	verdict.FailProperty(r.t, f.Property(), b.String())
}

// asProgram is what ran, as a scheduled program that replays it.
func (r *scheduledRun) asProgram(v *model.Violation) *program.Program {
	h := map[string]string{program.HeaderMode: string(program.Scheduled), program.HeaderSessions: strconv.Itoa(r.sessionCount),
		program.HeaderQueue: r.scheduler.in.Queue.Source}
	p := &program.Program{Header: h, Ops: append([]program.Op(nil), r.issued...)}
	if v != nil {
		p.SetVerdict(v)
	}
	return p
}
