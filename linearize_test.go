package pgqcheck_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"pgqcheck/internal/testflags"
	"pgqcheck/linear"
	"pgqcheck/mutant"
	"pgqcheck/sut/suttest"
)

// Property 7: concurrent histories checked with porcupine (go test -run Linear).

var stressFor = flag.Duration("linear.stress", 2*time.Second, "how long each Linear stress run's traffic runs")

// TestLinearStress runs free-running traffic with faults against every queue under judgement
// and requires every job's history to be linearizable and the drained queue to account for
// every job exactly once.
func TestLinearStress(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			in := suttest.Install(t, q)
			res, err := linear.Stress(context.Background(), in, linear.StressConfig{Duration: *stressFor})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (checked in %v)", res, res.CheckTime.Round(time.Millisecond))
			if res.Failed() {
				t.Fatalf("%s\n%s", res, res.Verdict.Explanation)
			}
			// A run that never reclaimed, refused or expired anything proves little.
			if c := res.Counts; c.Completions == 0 || c.RejectedCompletions == 0 || c.Expiries == 0 || c.Locks == 0 && q.Lock != "" {
				t.Fatalf("the run exercised too little to be a verdict: %s", c)
			}
		})
	}
}

// TestLinearScheduled draws programs and interleavings with rapid for every queue under
// judgement; a failure replays from its fail file and shrinks like any rapid failure.
func TestLinearScheduled(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			ctx := context.Background()
			in := suttest.Install(t, q)
			cfg := linear.ScheduledConfig{Name: q.Name}
			s := linear.NewScheduler(ctx, in, cfg)
			defer s.Close()
			// A failure is kept as a scheduled program in the corpus, where TestPropPrograms
			// replays it on every go test, after its operations are reduced.
			defer func() {
				if f := s.Last(); t.Failed() && f != nil {
					s.Close()
					saveFinding(t, linear.ReduceScheduled(ctx, in, cfg, f, *reduceFor))
				}
			}()
			rapid.Check(t, s.Property)
		})
	}
}

// TestLinearMutants is the proof that the Linear suite bites: every mutant that expects
// "Linear" must fail in stress mode and in scheduled mode, and the failure must name a
// property. Stress failures must leave a report folder with the history and a timeline.
func TestLinearMutants(t *testing.T) {
	ms, err := mutant.Load("testdata/mutants")
	if err != nil {
		t.Fatal(err)
	}
	// Searches here start from scratch (no fail files are written: the mutants are meant to
	// fail), get more checks, since a race needs the right draw, and a short shrink.
	defer testflags.Defaults(map[string]string{"rapid.nofailfile": "true", "rapid.checks": "500", "rapid.shrinktime": "1s"})()
	expected := 0
	for _, m := range ms {
		if !m.Expects("Linear") {
			continue
		}
		expected++
		t.Run(m.Name, func(t *testing.T) { linearMutant(t, m) })
	}
	if expected == 0 {
		t.Fatal("no mutant expects Linear: the suite's power is unproven")
	}
}

// linearMutant requires a mutant to fail stress mode and scheduled mode, naming a property.
func linearMutant(t *testing.T, m *mutant.Mutant) {
	ctx := context.Background()
	in := suttest.Install(t, m.Queue)
	t.Run("stress", func(t *testing.T) {
		for attempt := 1; ; attempt++ {
			// The mutant's failure is expected: its report goes where the test cleans up.
			res, err := linear.Stress(ctx, in, linear.StressConfig{Duration: *stressFor, ReportDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() {
				if res.Verdict.Violation == nil {
					t.Fatalf("caught by something other than a property: %s", res.Verdict)
				}
				checkReport(t, res)
				t.Logf("caught on attempt %d: %s\nreport: %s", attempt, res.Verdict.Violation, res.ReportDir)
				return
			}
			if attempt == 3 {
				t.Fatalf("mutant survived three stress runs: %s\nlast: %s", m.Bug, res)
			}
		}
	})
	t.Run("scheduled", func(t *testing.T) {
		start := time.Now()
		cfg := linear.ScheduledConfig{Name: m.Name, ReportDir: t.TempDir()}
		f, err := linear.SearchScheduled(ctx, in, t.Name(), cfg)
		switch {
		case err != nil:
			t.Fatalf("caught by something other than a property: %v", err)
		case f == nil:
			t.Fatalf("mutant survived: %s", m.Bug)
		}
		// The failure replays from its saved program alone: the interleaving is the program.
		g, err := linear.ReplayProgram(ctx, in, cfg, f.Program)
		if err != nil || g == nil || g.Property() != f.Property() {
			t.Fatalf("the failure did not replay from its program (%v, %v):\n%s", g, err, f.Program.Format())
		}
		t.Logf("caught in %v: %s\nreport: %s", time.Since(start).Round(time.Millisecond), f.Verdict(), f.ReportDir)
	})
}

// checkReport asserts that a failed stress run left what a reader needs: the history, and for
// a job whose history is not linearizable, its cut and a timeline showing the culprit.
func checkReport(t *testing.T, res *linear.Result) {
	t.Helper()
	must := []string{linear.ReportHistory, linear.ReportVerdict}
	if res.Verdict.Job != 0 {
		must = append(must, linear.ReportJob, linear.ReportTimeline)
	}
	for _, f := range must {
		if _, err := os.Stat(filepath.Join(res.ReportDir, f)); err != nil {
			t.Fatalf("report folder: %v", err)
		}
	}
	if res.Verdict.Culprit != "" {
		html, _ := os.ReadFile(filepath.Join(res.ReportDir, linear.ReportTimeline))
		want, _ := json.Marshal(res.Verdict.Culprit)
		if !strings.Contains(string(html), strings.Trim(string(want), `"`)) {
			t.Fatalf("the timeline does not show the culprit %q", res.Verdict.Culprit)
		}
	}
}

// TestLinearHistories re-checks the histories saved under testdata/histories, each against
// the verdict it records ("ok", or "property N"). With PGQCHECK_HISTORY=FILE it re-checks that
// one file instead, prints the verdict and writes a timeline.
func TestLinearHistories(t *testing.T) {
	if path := os.Getenv(linear.EnvHistory); path != "" {
		name := filepath.Base(filepath.Dir(path)) + "-" + strings.TrimSuffix(filepath.Base(path), ".json")
		html := filepath.Join(os.TempDir(), "pgqcheck-timeline-"+name+".html")
		v, err := linear.CheckFile(path, html)
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
			h, err := linear.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			v := linear.Check(h, time.Minute)
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
		raw, err := linear.Throughput(context.Background(), in, workers, d, false)
		if err != nil {
			b.Fatal(err)
		}
		rec, err := linear.Throughput(context.Background(), in, workers, d, true)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(raw, "raw-ops/s")
		b.ReportMetric(rec, "recorded-ops/s")
		b.ReportMetric(rec/raw, "recorded/raw")
	}
}
