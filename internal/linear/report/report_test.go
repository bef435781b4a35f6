package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// TestReportFolder: a failing verdict leaves the history, the failing job's cut, a timeline
// that shows the violating operation, and a verdict with the command that re-checks it.
func TestLinearReportFolder(t *testing.T) {
	// Job 1 is completed by its stale generation 1 after generation 2's claim; job 2 is fine.
	enq := model.Input{Kind: model.OpEnqueue}
	claim := model.Input{Kind: model.OpClaim}
	complete := func(job, gen int64) model.Input { return model.Input{Kind: model.OpComplete, Job: job, Gen: gen} }
	h := &history.History{Version: history.Version, Queue: "handmade", Mode: "handmade", Clock: "logical", Ops: []history.Op{
		{Client: 0, Session: "enqueuer", Call: 1, Return: 2, Input: enq, Output: model.Output{Job: 1}},
		{Client: 1, Session: "enqueuer", Call: 1, Return: 2, Input: enq, Output: model.Output{Job: 2}},
		{Client: 2, Session: "w1", Call: 3, Return: 4, Input: claim, Output: model.Output{Found: true, Job: 1, Gen: 1}},
		{Client: 3, Session: "chaos", Call: 5, Return: 6, Input: model.Input{Kind: model.OpExpire, Job: 1}},
		{Client: 4, Session: "w2", Call: 7, Return: 8, Input: claim, Output: model.Output{Found: true, Job: 1, Gen: 2}},
		{Client: 5, Session: "w1", Call: 9, Return: 10, Input: complete(1, 1), Output: model.Output{Rows: 1}},
		{Client: 6, Session: "w3", Call: 3, Return: 4, Input: claim, Output: model.Output{Found: true, Job: 2, Gen: 1}},
		{Client: 7, Session: "w3", Call: 5, Return: 6, Input: complete(2, 1), Output: model.Output{Rows: 1}},
	}}
	v := check.Check(h, time.Minute)
	if v.OK || v.Job != 1 {
		t.Fatalf("got %s", v)
	}
	dir := t.TempDir()
	if err := Write(dir, h, v); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{HistoryFile, JobFile, TimelineFile, VerdictFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, TimelineFile))
	culprit, _ := json.Marshal("complete(1, gen 1) -> 1 row")
	if !strings.Contains(string(html), strings.Trim(string(culprit), `"`)) {
		t.Fatalf("the timeline does not show the violating operation")
	}
	if strings.Contains(string(html), "job 2 gen 1") {
		t.Fatalf("the timeline is not cut to the failing job")
	}
	text, _ := os.ReadFile(filepath.Join(dir, VerdictFile))
	if !strings.Contains(string(text), EnvHistory+"=") {
		t.Fatalf("the verdict does not say how to re-check:\n%s", text)
	}
	for _, f := range []string{HistoryFile, JobFile} {
		out := filepath.Join(t.TempDir(), "t.html")
		v2, err := CheckFile(filepath.Join(dir, f), out)
		if err != nil || v2.OK || v2.Violation.Error() != v.Violation.Error() {
			t.Fatalf("%s re-checked: %v, %v; want %s", f, v2, err, v.Violation)
		}
	}
}
