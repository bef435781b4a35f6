package verdict

import (
	"fmt"
	"strings"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// Finding is a broken promise, as a value from the moment it is detected to the moment it is
// printed: go test output, the kill table, campaign reports and merged reports all read the
// property from Violation, never from text.
type Finding struct {
	Violation *model.Violation `json:"violation"`
	Queue     string           `json:"queue"`  // the queue's name
	Source    string           `json:"source"` // where its SQL came from
	Mode      program.Mode     `json:"mode"`
	// Program is the case that replays it (sequential and scheduled modes): its .ops text is
	// what is saved, and it stands alone.
	Program *program.Program `json:"-"`
	// Trace is the program as it ran, numbered, with the queue's answers.
	Trace string `json:"trace,omitempty"`
	// Model is what the specification held when the program stopped (sequential mode).
	Model string `json:"model,omitempty"`
	// ReportDir is the concurrent modes' report folder: history, the failing job's timeline.
	ReportDir string `json:"report_dir,omitempty"`
	// FuzzInput is a scheduled run's choices, as a FuzzScheduled input.
	FuzzInput []byte `json:"-"`
	// Checks is the number of property runs (or histories) until the first failing one.
	Checks int `json:"checks,omitempty"`
	// Flaky: the failure did not reproduce when its case was replayed.
	Flaky bool `json:"flaky,omitempty"`
}

// Property is the promise the finding breaks.
func (f *Finding) Property() model.Property { return f.Violation.Property }

// Verdict is the one-line verdict, "property N (name): what happened".
func (f *Finding) Verdict() string { return f.Violation.Error() }

// String is the finding as a reader sees it: the verdict, the queue, the program with the
// queue's answers, and where the report is.
func (f *Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nqueue: %s (%s mode)\n", f.Verdict(), f.Source, f.Mode)
	if f.Trace != "" {
		b.WriteString("program (queue's answers):\n")
		b.WriteString(f.Trace)
	}
	if f.Model != "" {
		fmt.Fprintf(&b, "model now: %s\n", f.Model)
	}
	if f.ReportDir != "" {
		fmt.Fprintf(&b, "report: %s\n", f.ReportDir)
	}
	if f.Flaky {
		b.WriteString("(flaky: the case did not fail again when replayed)\n")
	}
	return b.String()
}
