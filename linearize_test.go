package pgqcheck_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/linear/schedule"
	"github.com/pgqcheck/pgqcheck/internal/linear/stress"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/suite"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Property 7: concurrent histories checked with porcupine (go test -run Linear).

// TestLinearStress runs free-running traffic with faults against every queue under judgement
// and requires every job's history to be linearizable and the drained queue to account for
// every job exactly once.
func TestLinearStress(t *testing.T) {
	// Not beside other tests of this package, and one queue at a time: stress traffic keeps the
	// cores busy, and its verdict grows with what it ran.
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) { suite.Stress(t, q, suites()) })
	}
}

// TestLinearScheduled draws programs and interleavings with rapid for every queue under
// judgement; a failure shrinks like any rapid failure and is kept as a scheduled program in
// the corpus, where TestPropPrograms replays it on every go test, after its operations are
// reduced.
func TestLinearScheduled(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			suite.Scheduled(t, q, suites())
		})
	}
}

// TestMutants is the proof that the suite bites: the kill table `pgqcheck mutants` prints,
// built by the same code. Every mutant must be caught by every mode of every suite its
// mutant.json expects (Prop: sequential; Linear: stress and scheduled), with a property. A
// catch must leave what a reader needs: a stress catch its report folder and timeline, a
// scheduled catch a program that replays it.
func TestMutants(t *testing.T) {
	suttest.SelfCheck(t, ".")
	// The kill table moves rapid's flags while it hunts: it runs only beside the tests that do
	// not read them (a parallel test starts once every sequential one, the rapid users, ended).
	t.Parallel()
	ms, err := mutant.Load("testdata/mutants")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := pgserver.Shared(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kt, err := campaign.HuntMutants(context.Background(), campaign.KillConfig{Server: srv, Mutants: ms, Budget: time.Minute, Seed: 1, ReportDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	kt.Print(&table)
	t.Logf("kill table:\n%s", table.String())
	if sum, ok := kt.Summary(); !ok {
		t.Errorf("%s", sum)
	}
	for _, e := range kt.Errors() {
		t.Errorf("harness: %s", e)
	}
	for _, suite := range []string{"Prop", "Linear"} {
		n := 0
		for _, m := range ms {
			if m.Expects(suite) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no mutant expects %s: that suite's power is unproven", suite)
		}
	}
	ctx := context.Background()
	byName := map[string]*mutant.Mutant{}
	for _, m := range ms {
		byName[m.Name] = m
	}
	// A real-time catch hangs on a statement landing just past a lease's edge, which a loaded
	// machine can shift: one whose program does not reproduce it is counted and reported here,
	// with its program, not judged as a replay.
	var unreproduced []string
	for _, r := range kt.Rows {
		fl := r.Failure
		if fl == nil || fl.Finding() == nil {
			continue
		}
		f := fl.Finding()
		switch r.Mode {
		case "stress":
			t.Run(r.Mutant+"/stress-report", func(t *testing.T) { checkReport(t, f) })
		case "scheduled":
			if f.Flaky {
				unreproduced = append(unreproduced, fmt.Sprintf("%s (rapid's own replay of it):\n%s", r.Mutant, f.Program.Format()))
				continue
			}
			t.Run(r.Mutant+"/scheduled-replay", func(t *testing.T) {
				// The failure replays from its program alone: the interleaving is the program.
				m := byName[r.Mutant]
				in := suttest.Install(t, m.Queue)
				var g *verdict.Finding
				var err error
				caught := m.Retry(func() bool {
					g, err = schedule.ReplayProgram(ctx, in, schedule.Config{Name: r.Mutant, ReportDir: t.TempDir()}, f.Program)
					return err != nil || g != nil && g.Property() == f.Property()
				})
				switch {
				case caught && err == nil:
				case err == nil && m.Replays() > 1:
					unreproduced = append(unreproduced, fmt.Sprintf("%s (%d replays of its program):\n%s", r.Mutant, m.Replays(), f.Program.Format()))
				default:
					t.Fatalf("the failure did not replay from its program (%v, %v):\n%s", g, err, f.Program.Format())
				}
			})
		}
	}
	if n := len(unreproduced); n > 0 {
		t.Logf("%d real-time scheduled catches did not reproduce from their programs (each was caught; its replay missed the lease's edge):\n%s", n, strings.Join(unreproduced, "\n"))
	}
}

// checkReport asserts that a failed stress run left what a reader needs: the history, and for
// a job whose history is not linearizable, its cut and a timeline showing the culprit.
func checkReport(t *testing.T, f *verdict.Finding) {
	t.Helper()
	if f.ReportDir == "" {
		t.Fatal("no report folder")
	}
	h, err := history.Load(filepath.Join(f.ReportDir, report.HistoryFile))
	if err != nil {
		t.Fatalf("report folder: %v", err)
	}
	v := check.Check(h, time.Minute)
	if v.OK || v.Violation == nil || v.Violation.Property != f.Property() {
		t.Fatalf("the saved history does not fail again with %s: %s", f.Property(), v)
	}
	must := []string{report.HistoryFile, report.VerdictFile}
	if v.Job != 0 {
		must = append(must, report.JobFile, report.TimelineFile)
	}
	for _, name := range must {
		if _, err := os.Stat(filepath.Join(f.ReportDir, name)); err != nil {
			t.Fatalf("report folder: %v", err)
		}
	}
	if v.Culprit != "" {
		html, _ := os.ReadFile(filepath.Join(f.ReportDir, report.TimelineFile))
		want, _ := json.Marshal(v.Culprit)
		if !strings.Contains(string(html), strings.Trim(string(want), `"`)) {
			t.Fatalf("the timeline does not show the culprit %q", v.Culprit)
		}
	}
}

// TestLinearHistories re-checks the histories saved under testdata/histories, each against
// the verdict it records ("ok", or "property N"). With PGQCHECK_HISTORY=FILE it re-checks that
// one file instead, prints the verdict and writes a timeline.
func TestLinearHistories(t *testing.T) {
	if path := os.Getenv(report.EnvHistory); path != "" {
		name := filepath.Base(filepath.Dir(path)) + "-" + strings.TrimSuffix(filepath.Base(path), ".json")
		html := filepath.Join(os.TempDir(), "pgqcheck-timeline-"+name+".html")
		v, err := report.CheckFile(path, html)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s\n%s\ntimeline: %s", v, v.Explanation, html)
		if !v.OK {
			t.Fail()
		}
		return
	}
	files, _ := filepath.Glob("testdata/histories/*.json")
	if len(files) == 0 {
		t.Fatal("no histories under testdata/histories")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			h, err := history.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			v := check.Check(h, time.Minute)
			switch {
			case h.Expect == "ok" && !v.OK:
				t.Fatalf("a legal history is rejected: %s\n%s", v, v.Explanation)
			case h.Expect == "ok":
			case !strings.HasPrefix(h.Expect, "property "):
				t.Fatalf("expect is %q; want \"ok\" or \"property N\"", h.Expect)
			case v.OK || v.Violation == nil:
				t.Fatalf("an illegal history (%s) passes: %s", h.Expect, v)
			case fmt.Sprintf("property %d", int(v.Violation.Property)) != h.Expect:
				t.Fatalf("expected %s, got %s", h.Expect, v.Violation)
			}
		})
	}
}

// BenchmarkLinearRecording measures what recording costs: the same statements on the same
// number of connections, bare and recorded, in one run, and their ratio.
func BenchmarkLinearRecording(b *testing.B) {
	in := suttest.Install(b, suttest.Queues(b)[0])
	const workers, d = 3, 2 * time.Second
	for b.Loop() {
		raw, err := stress.Throughput(context.Background(), in, workers, d, false)
		if err != nil {
			b.Fatal(err)
		}
		rec, err := stress.Throughput(context.Background(), in, workers, d, true)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(raw, "raw-ops/s")
		b.ReportMetric(rec, "recorded-ops/s")
		b.ReportMetric(rec/raw, "recorded/raw")
	}
}
