package campaign

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/linear/stress"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func server(t *testing.T) *pgserver.Server {
	t.Helper()
	srv, err := pgserver.Shared(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func mode(t *testing.T, spec string) Mode {
	t.Helper()
	m, err := LookupModes(spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// copyMutant copies a mutant's folder into a temporary module root (root/testdata/mutants/name),
// so that the cases a campaign saves go there and not into the real tree.
func copyMutant(t *testing.T, name string) (root string, q *sut.Queue) {
	t.Helper()
	root = t.TempDir()
	src := suttest.ModuleDir(t, filepath.Join("testdata", "mutants", name))
	dst := filepath.Join(root, "testdata", "mutants", name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q, err := sut.LoadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	return root, q
}

func run(t *testing.T, ctx context.Context, cfg Config) (*Report, string) {
	t.Helper()
	return runLogged(t, ctx, io.Discard, cfg)
}

// runLogged is run with the campaign's lines also written to also.
func runLogged(t *testing.T, ctx context.Context, also io.Writer, cfg Config) (*Report, string) {
	t.Helper()
	var log bytes.Buffer
	cfg.Server, cfg.Log, cfg.Progress = server(t), io.MultiWriter(&log, also), &log
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	rep, err := Run(ctx, ctx, cfg)
	if rep == nil {
		t.Fatalf("no report: %v\n%s", err, log.String())
	}
	var sum strings.Builder
	rep.Summary(&sum)
	return rep, log.String() + sum.String()
}

func TestCampaignHoldsOnSeed(t *testing.T) {
	// Not beside the other tests: its four seconds must reach a round of every mode, and
	// rounds beside other campaigns' are slower.
	root := t.TempDir()
	var rep *Report
	var out string
	// A loaded machine can end four seconds before a concurrent round has been checked: then the
	// campaign runs again, twice as long, up to three times.
	for try, d := 1, 4*time.Second; ; try, d = try+1, 2*d {
		rep, out = run(t, context.Background(), Config{Queue: sut.MustBuiltin("seed"), Mode: mode(t, AllModes), Workers: 2, Seed: 7, Duration: d, Root: root})
		if rep.Histories > 0 || try == 3 || rep.Verdict != VerdictHeld {
			break
		}
		t.Logf("%v checked no concurrent history; again for %v", d, 2*d)
	}
	if rep.Verdict != VerdictHeld || rep.Checks == 0 || rep.Histories == 0 || rep.Counts.Claims == 0 || rep.StopReason != "duration reached" || rep.Format != ReportFormat {
		t.Errorf("report: %+v\n%s", rep, out)
	}
	for _, p := range rep.Properties {
		if (p.Number == model.PLinearizable || p.Number == model.PFencing) && p.Status != StatusHeld || p.Number == model.PClaimCost && p.Status != StatusNotChecked {
			t.Errorf("%s: %s", p.Number, p.Status)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(root, "testdata", "*", "*", "*")); len(files) > 0 {
		t.Errorf("a passing campaign saved cases: %v", files)
	}
}

// TestCampaignSavesReplayableProgram: a sequential campaign on a queue whose completion ignores
// the generation finds property 1 and saves the reduced program as an .ops file. The program
// fails on that mutant and holds on the seed, replayed by itself; the next campaign on the
// mutant reports it as a saved case that still fails, and a campaign on the seed with the same
// corpus holds: a case is judged on the queue under test, not on the queue it was found on.
func TestCampaignSavesReplayableProgram(t *testing.T) {
	t.Parallel()
	root, q := copyMutant(t, "complete-ignores-generation")
	rep, out := run(t, context.Background(), Config{Queue: q, Mode: mode(t, "sequential"), Seed: 3, Duration: time.Minute, ShrinkTime: 2 * time.Second, Root: root})
	if rep.Verdict != VerdictViolated || len(rep.Failures) != 1 {
		t.Fatalf("verdict %s, %d failures\n%s", rep.Verdict, len(rep.Failures), out)
	}
	f := rep.Failures[0]
	t.Logf("the campaign's summary:\n%s", out)
	if f.Property != model.PFencing || f.PropertyName != "fencing" || !strings.HasPrefix(f.Verdict, "property 1 (fencing): ") || f.Mode != "sequential" {
		t.Errorf("failure: property %d %q, verdict %q", f.Property, f.PropertyName, f.Verdict)
	}
	if filepath.Dir(f.ProgramFile) != filepath.Join(root, "testdata", "programs", "found") || f.Program == "" || f.Trace == "" || f.Model == "" {
		t.Fatalf("program not saved under %s or not kept as fields: %+v", root, f)
	}
	for _, want := range []string{"program (queue's answers):", f.ProgramFile, "pgqcheck replay"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	saved, err := os.ReadFile(f.ProgramFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(saved), "# mode: sequential") || !strings.Contains(string(saved), f.Program) {
		t.Errorf("saved program:\n%s", saved)
	}

	ctx := context.Background()
	srv := func() (*pgserver.Server, error) { return server(t), nil }
	on, err := ReplayFile(ctx, srv, q, f.ProgramFile)
	if err != nil || on.Held() || on.Finding.Property() != model.PFencing {
		t.Errorf("replayed on the mutant: %+v, %v", on, err)
	}
	seed, err := ReplayFile(ctx, srv, sut.MustBuiltin("seed"), f.ProgramFile)
	if err != nil || !seed.Held() || seed.Trace == "" {
		t.Errorf("replayed on the seed: %+v, %v", seed, err)
	}

	again, out := run(t, ctx, Config{Queue: q, Mode: mode(t, "sequential"), Seed: 4, Duration: 2 * time.Second, Root: root})
	if len(again.Failures) == 0 || !again.Failures[0].Known || again.Failures[0].Property != model.PFencing || again.Failures[0].ProgramFile != f.ProgramFile {
		t.Errorf("the saved case was not replayed as a known failure:\n%s", out)
	}
	held, out := run(t, ctx, Config{Queue: sut.MustBuiltin("seed"), Mode: mode(t, "sequential"), Seed: 5, Duration: 2 * time.Second, Root: root})
	if held.Verdict != VerdictHeld {
		t.Errorf("a program found on the mutant failed the campaign judging the seed:\n%s", out)
	}
}

// TestCampaignScheduledFinding: a scheduled-mode failure carries its typed property, its
// program and interleaving as a field, and a FuzzScheduled input that replays it.
func TestCampaignScheduledFinding(t *testing.T) {
	t.Parallel()
	root, q := copyMutant(t, "complete-ignores-generation")
	rep, out := run(t, context.Background(), Config{Queue: q, Mode: mode(t, "scheduled"), Seed: 3, Duration: time.Minute, ShrinkTime: time.Second, Root: root, ReportDir: t.TempDir()})
	if rep.Verdict != VerdictViolated || len(rep.Failures) != 1 {
		t.Fatalf("verdict %s, %d failures\n%s", rep.Verdict, len(rep.Failures), out)
	}
	f := rep.Failures[0]
	t.Logf("the campaign's summary:\n%s", out)
	if f.Property != model.PFencing || !strings.Contains(f.Trace, "-- drain --") || f.ReportDir == "" || f.ProgramFile == "" {
		t.Errorf("failure: property %d, report %q, trace:\n%s", f.Property, f.ReportDir, f.Trace)
	}
	if filepath.Dir(f.FuzzFile) != filepath.Join(root, "fuzz", "testdata", "fuzz", "FuzzScheduled") {
		t.Fatalf("fuzz input not saved under %s: %q", root, f.FuzzFile)
	}
	srv := func() (*pgserver.Server, error) { return server(t), nil }
	on, err := ReplayFile(context.Background(), srv, q, f.FuzzFile)
	if err != nil || on.Held() || on.Finding.Property() != model.PFencing {
		t.Errorf("fuzz input replayed on the mutant: %+v, %v", on, err)
	}
	if on != nil && on.Finding != nil && on.Finding.ReportDir != "" {
		os.RemoveAll(on.Finding.ReportDir)
	}
	seed, err := ReplayFile(context.Background(), srv, sut.MustBuiltin("seed"), f.FuzzFile)
	if err != nil || !seed.Held() {
		t.Errorf("fuzz input replayed on the seed: %+v, %v", seed, err)
	}
}

// onLine is a writer that calls f once, when a line containing s is written to it.
func onLine(s string, f func()) io.Writer {
	var once sync.Once
	return writerFunc(func(p []byte) (int, error) {
		if strings.Contains(string(p), s) {
			once.Do(f)
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// TestInterruptWritesReport: cancelling the campaign's context (Ctrl-C) stops it after the
// current round, and it still reports what ran.
func TestInterruptWritesReport(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	// A second into the search (setup takes what the machine's load makes it take), the first
	// round, rapid's property runs of a few milliseconds each, is under way.
	started := onLine("searching", func() { time.AfterFunc(time.Second, cancel) })
	start := time.Now()
	rep, out := runLogged(t, ctx, started, Config{Queue: sut.MustBuiltin("seed"), Mode: mode(t, "sequential"), Seed: 9, Duration: 5 * time.Minute, Root: t.TempDir(), PlanSizes: []int{1000}})
	if !rep.Interrupted || rep.Checks == 0 || rep.Verdict != VerdictHeld || rep.ClaimCost != nil || time.Since(start) > time.Minute {
		t.Errorf("after cancel: interrupted %v, checks %d, verdict %s, claim cost %v, after %s\n%s", rep.Interrupted, rep.Checks, rep.Verdict, rep.ClaimCost, time.Since(start), out)
	}
	path, err := rep.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ReadReport(path); err != nil || !back.Interrupted {
		t.Errorf("report written after cancel: %+v, %v", back, err)
	}
}

// TestReportRoundTrip: a report keeps each failure's property as a number in JSON and reads it
// back as a typed property; merging sums shards and keeps the properties.
func TestReportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, checks int64, failures []*Failure) string {
		r := &Report{Format: ReportFormat, Tool: "pgqcheck run", Queue: QueueInfo{Name: "seed", Source: "built-in seed"}, Mode: "sequential",
			Workers: 1, Seed: 3, Checks: checks, Ops: 10 * checks, Backend: "dsn", ServerVersion: "15.18", Failures: failures}
		r.Counts.Claims = checks
		r.fillProperties(sequentialMode{}.Properties())
		r.decideVerdict()
		p := filepath.Join(dir, name)
		if err := WriteJSON(p, r); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := &Failure{Property: model.PDoneOnce, PropertyName: model.PDoneOnce.Name(), Verdict: "property 4 (done at most once): job 1 completed twice", Mode: "sequential"}
	paths := []string{mk("a.json", 100, nil), mk("b.json", 50, nil), mk("c.json", 5, []*Failure{bad})}
	b, err := os.ReadFile(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Failures []map[string]any `json:"failures"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.Failures) != 1 || raw.Failures[0]["property"] != float64(4) {
		t.Fatalf("the JSON does not keep the property number: %v %v", raw, err)
	}
	var rs []*Report
	for _, p := range paths {
		r, err := ReadReport(p)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	if rs[2].Failures[0].Property != model.PDoneOnce || rs[2].Verdict != VerdictViolated {
		t.Errorf("read back: %+v", rs[2].Failures[0])
	}
	m, err := Merge(paths, rs)
	if err != nil {
		t.Fatal(err)
	}
	if m.Checks != 155 || m.Workers != 3 || len(m.Failures) != 1 || m.Failures[0].Property != model.PDoneOnce || m.Verdict != VerdictViolated || len(m.Shards) != 3 || m.Counts.Claims != 155 {
		t.Errorf("merged: %+v", m)
	}
	for _, p := range m.Properties {
		switch {
		case p.Number == model.PDoneOnce && (p.Status != StatusViolated || p.Failures != 1):
			t.Errorf("merged done-once: %+v", p)
		case p.Number == model.PFencing && p.Status != StatusHeld:
			t.Errorf("merged fencing: %+v", p)
		case p.Number == model.PLinearizable && p.Status != StatusNotChecked:
			t.Errorf("merged linearizability (no shard checked it): %+v", p)
		}
	}
	if WorstVerdict(rs[:2]) != VerdictHeld || WorstVerdict(rs) != VerdictViolated {
		t.Error("worst verdict")
	}
	if _, err := Merge([]string{"a", "b"}, []*Report{rs[0], {Queue: QueueInfo{Name: "split"}}}); err == nil {
		t.Error("merged reports of two queues")
	}
	// A report from before format 2 reads, its property typed.
	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, []byte(`{"format": 1, "queue": {"name": "seed"}, "verdict": "violated", "failures": [{"property": 1, "verdict": "property 1 (fencing): x"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := ReadReport(old); err != nil || r.Failures[0].Property != model.PFencing || r.Failures[0].PropertyName != "fencing" {
		t.Errorf("format 1: %+v, %v", r, err)
	}
	if err := os.WriteFile(old, []byte(`{"format": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReport(old); err == nil || !strings.Contains(err.Error(), "format 99") {
		t.Errorf("an unknown format read: %v", err)
	}
}

// TestKillTable: the kill table hunts a mutant with every mode its mutant.json demands (Linear:
// stress and scheduled, as TestMutants does), names the typed property that caught it,
// and checks that the correct queues pass.
func TestKillTable(t *testing.T) {
	suttest.SelfCheck(t, "./internal/campaign")
	t.Parallel()
	ms := []*mutant.Mutant{suttest.Mutant(t, "complete-ignores-generation")}
	if !ms[0].Expects("Prop") || !ms[0].Expects("Linear") {
		t.Fatalf("complete-ignores-generation should expect Prop and Linear: %+v", ms[0])
	}
	var log bytes.Buffer
	kt, err := HuntMutants(context.Background(), KillConfig{Server: server(t), Mutants: ms, Budget: 30 * time.Second, Seed: 1, QueueChecks: 20, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	var modes []string
	for _, r := range kt.Rows {
		modes = append(modes, r.Suite+"/"+r.Mode)
		if !r.Caught || r.Err != "" || r.Checks == 0 {
			t.Errorf("row %+v", r)
		}
		if r.Mode == "sequential" && r.Property != model.PFencing {
			t.Errorf("sequential caught by %s, want fencing", r.Property)
		}
	}
	if strings.Join(modes, ",") != "Prop/sequential,Linear/stress,Linear/scheduled,Deploy/deploy" {
		t.Errorf("rows: %v", modes)
	}
	if len(kt.Queues) != len(sut.Builtins())+1 || len(kt.Failed()) > 0 || len(kt.Errors()) > 0 {
		t.Errorf("correct queues: %+v", kt.Queues)
	}
	if sum, ok := kt.Summary(); !ok {
		t.Errorf("summary: %s", sum)
	}
	var table bytes.Buffer
	kt.Print(&table)
	for _, want := range []string{"MODE", "scheduled", "stress", "property 1 (fencing)", "correct queues:", "passed"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// A survivor makes the table fail.
	kt.Rows[0].Caught = false
	if _, ok := kt.Summary(); ok || len(kt.Survivors()) != 1 {
		t.Errorf("a surviving row passed the table")
	}
}

// TestKillTableWaitsForChances: a row is not given up when its budget is spent but only once
// its mutant had enough chances to show, up to stretch budgets, since a loaded machine gives
// fewer in a minute: a stress row waits for enough dropped replies and cuts (a bug that only a
// lost connection shows needs them), a scheduled row of a mutant only real time shows for
// enough statements landed just before a lease's edge (its catch needs one in the part of a
// lease it breaks). The correct seed queue, posing as such a mutant, survives: both rows must
// have run past their budget until one of their two bounds.
func TestKillTableWaitsForChances(t *testing.T) {
	suttest.SelfCheck(t, "./internal/campaign")
	t.Parallel()
	m := &mutant.Mutant{Name: "seed", Bug: "none: the correct seed queue", Expect: []string{"Linear", "PropLeaseTime"}, Queue: sut.MustBuiltin(sut.DefaultQueue)}
	budget := time.Second
	kt, err := HuntMutants(context.Background(), KillConfig{Server: server(t), Mutants: []*mutant.Mutant{m}, Budget: budget, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	survivors := strings.Join(kt.Survivors(), "; ")
	seen := map[string]bool{}
	for _, r := range kt.Rows {
		if r.Caught || r.Err != "" {
			t.Fatalf("the correct seed queue failed its %s row: %+v", r.Mode, r)
		}
		seen[r.Mode] = true
		switch r.Mode {
		case "stress":
			t.Logf("stress row: %v, %d histories, %d dropped replies and cuts", r.Time, r.Checks, r.Lost)
			if r.Lost < stress.LostFaultsToCatch && r.Time < stretch*budget {
				t.Errorf("the stress row gave up after %v with %d dropped replies and cuts; it should run until %d of them or %v", r.Time, r.Lost, stress.LostFaultsToCatch, stretch*budget)
			}
			if !strings.Contains(survivors, fmt.Sprintf("%d dropped replies and cuts", r.Lost)) {
				t.Errorf("the survivor's line does not say how many lost connections it survived: %s", survivors)
			}
		case "scheduled":
			t.Logf("scheduled row: %v, %d histories, %d landings", r.Time, r.Checks, r.Landings)
			if r.Landings < RealTimeLandingsToCatch && r.Time < stretch*budget {
				t.Errorf("the scheduled row gave up after %v with %d statements landed before a lease's edge; it should run until %d of them or %v", r.Time, r.Landings, RealTimeLandingsToCatch, stretch*budget)
			}
			if !strings.Contains(survivors, fmt.Sprintf("scheduled: %v, %d histories, %d statements landed", Round(r.Time), r.Checks, r.Landings)) {
				t.Errorf("the survivor's line does not say how many landings it survived: %s", survivors)
			}
		}
	}
	if !seen["stress"] || !seen["scheduled"] {
		t.Fatalf("no stress or no scheduled row: %+v", kt.Rows)
	}
}

func TestRoundSeeds(t *testing.T) {
	seen := map[uint64]bool{}
	for w := 0; w < 4; w++ {
		for r := 0; r < 1000; r++ {
			s := RoundSeed(42, w, r)
			if s == 0 || seen[s] {
				t.Fatalf("round seed %d (worker %d, round %d) is zero or repeats", s, w, r)
			}
			seen[s] = true
		}
	}
	if RoundSeed(42, 1, 5) != RoundSeed(42, 1, 5) {
		t.Fatal("round seeds are not reproducible")
	}
}

func TestPropertyPrints(t *testing.T) {
	if model.PFencing.String() != "property 1 (fencing)" || model.PClaimCost.String() != "property 10 (claim cost)" || model.PClaimOrder.Name() != "claim order" {
		t.Errorf("%s, %s, %s", model.PFencing, model.PClaimCost, model.PClaimOrder.Name())
	}
}

// TestCampaignStressFinding: a stress-mode failure keeps the failing job's history under
// testdata/histories, marked with its property, and re-checking that history fails with the
// same typed property.
func TestCampaignStressFinding(t *testing.T) {
	t.Parallel()
	root, q := copyMutant(t, "claim-without-lock")
	rep, out := run(t, context.Background(), Config{Queue: q, Mode: mode(t, "stress"), Seed: 3, Duration: time.Minute, Root: root, ReportDir: t.TempDir()})
	if rep.Verdict != VerdictViolated || len(rep.Failures) != 1 {
		t.Fatalf("verdict %s, %d failures\n%s", rep.Verdict, len(rep.Failures), out)
	}
	f := rep.Failures[0]
	if filepath.Dir(f.ReplayFile) != filepath.Join(root, "testdata", "histories") || f.ReportDir == "" || f.Trace == "" {
		t.Fatalf("history not saved under %s, or no report folder or explanation: %+v\n%s", root, f, out)
	}
	r, err := ReplayFile(context.Background(), nil, q, f.ReplayFile)
	if err != nil || r.Held() || r.History.Violation == nil || r.History.Violation.Property != f.Property {
		t.Errorf("re-checking the saved history: %+v, %v", r, err)
	}
	// The failing round's folder has its measures page, the report the round's measures, and
	// the written report a copy of the page beside its JSON.
	if _, err := os.Stat(filepath.Join(f.ReportDir, report.MeasuresFile)); err != nil {
		t.Errorf("the failing round's report folder has no measures page: %v", err)
	}
	st := rep.Stress
	if st == nil || st.Measures == nil || st.Measures.ClaimLatency.Count == 0 || len(st.Measures.Faults) == 0 {
		t.Fatalf("the report has no stress round's measures (or they saw no claim or no fault): %+v", st)
	}
	dir := t.TempDir()
	path, err := rep.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if page := strings.TrimSuffix(path, ".json") + "-measures.html"; rep.Stress.Page != page {
		t.Errorf("the report's measures page is %q, want %q", rep.Stress.Page, page)
	} else if b, err := os.ReadFile(page); err != nil || !bytes.Contains(b, []byte(`id="measures-table"`)) {
		t.Errorf("the measures page beside the report: %v", err)
	}
	back, err := ReadReport(path)
	if err != nil || back.Stress == nil || back.Stress.Measures.RejectedCompletions != st.Measures.RejectedCompletions {
		t.Errorf("the stress round's measures did not survive the report's JSON: %+v, %v", back.Stress, err)
	}
}

// TestCampaignReportsNotPromised: an at-least-once queue, which declares that it does not fence
// completions, passes its campaign; the report counts the stale completions it accepted as not
// promised and shows the first one with its reduced program, and saves no case. The same
// campaign on the seed sees none.
func TestCampaignReportsNotPromised(t *testing.T) {
	t.Parallel()
	q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/queues/at-least-once"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	rep, out := run(t, context.Background(), Config{Queue: q, Mode: mode(t, "sequential,stress"), Seed: 11, Duration: 6 * time.Second, ShrinkTime: 2 * time.Second, Root: root})
	if rep.Verdict != VerdictHeld || rep.Counts.NotPromised == 0 || rep.NotPromised == nil {
		t.Fatalf("verdict %s, %d not promised, example %v\n%s", rep.Verdict, rep.Counts.NotPromised, rep.NotPromised, out)
	}
	if f := rep.NotPromised; f.Property != model.PFencing || f.Trace == "" || strings.Count(f.Program, "\n") > 6 {
		t.Errorf("the example is property %d with a program of %d lines:\n%s", f.Property, strings.Count(f.Program, "\n"), f.Program)
	}
	// When it was found is measured as a violation's is: from the search's start, before reducing.
	if f := rep.NotPromised; f.FoundAfterS <= 0 || f.FoundAfterS > rep.ElapsedS {
		t.Errorf("the example was found after %.3fs of a %.3fs campaign", f.FoundAfterS, rep.ElapsedS)
	}
	for _, p := range rep.Properties {
		if p.Number == model.PFencing && (p.Status != StatusNotPromised || p.Exercised != rep.Counts.NotPromised) {
			t.Errorf("fencing: %s, %d exercised; want %s, %d", p.Status, p.Exercised, StatusNotPromised, rep.Counts.NotPromised)
		}
	}
	if !strings.Contains(out, "not promised") {
		t.Errorf("the summary does not say what was not promised:\n%s", out)
	}
	if files, _ := filepath.Glob(filepath.Join(root, "testdata", "*", "*", "*")); len(files) > 0 {
		t.Errorf("a campaign that held saved cases: %v", files)
	}
	seed, out := run(t, context.Background(), Config{Queue: sut.MustBuiltin("seed"), Mode: mode(t, "sequential"), Seed: 11, Duration: 2 * time.Second, Root: root})
	if seed.Counts.NotPromised != 0 || seed.NotPromised != nil {
		t.Errorf("the seed, which promises fencing, has %d not-promised findings\n%s", seed.Counts.NotPromised, out)
	}
}
