package killtable_test

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

	"pgqcheck/campaign"
	_ "pgqcheck/goqueues" // the Go queues and their mutants
	"pgqcheck/internal/testflags"
	"pgqcheck/linear/check"
	"pgqcheck/linear/history"
	"pgqcheck/linear/report"
	"pgqcheck/linear/schedule"
	"pgqcheck/mutant"
	"pgqcheck/sut/pgserver"
	"pgqcheck/sut/suttest"
	"pgqcheck/verdict"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// As in the root package: rapid's shrinker gets 10 s unless the command line chose otherwise.
	testflags.Defaults(map[string]string{"rapid.shrinktime": "10s"})
	os.Exit(pgserver.Main(m))
}

// TestMutants is the proof that the suite bites: the kill table `pgqcheck mutants` prints,
// built by the same code. Every mutant must be caught by every mode of every suite its
// mutant.json expects (Prop: sequential; Linear: stress and scheduled), with a property. A
// catch must leave what a reader needs: a stress catch its report folder and timeline, a
// scheduled catch a program that replays it.
func TestMutants(t *testing.T) {
	suttest.SelfCheck(t, "./killtable")
	ms, err := mutant.Load(filepath.Join("..", "testdata", "mutants"))
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
