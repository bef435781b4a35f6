package pgqcheck_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/verdict"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/linear/schedule"
	"github.com/pgqcheck/pgqcheck/internal/linear/stress"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Property 7: concurrent histories checked with porcupine (go test -run Linear).

var stressFor = flag.Duration("linear.stress", 2*time.Second, "how long each Linear stress run's traffic runs")

// TestLinearStress runs free-running traffic with faults against every queue under judgement
// and requires every job's history to be linearizable and the drained queue to account for
// every job exactly once.
func TestLinearStress(t *testing.T) {
	// Not beside other tests of this package, and one queue at a time: stress traffic keeps the
	// cores busy, and its verdict grows with what it ran.
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			in := suttest.Install(t, q)
			// A run that never reclaimed, refused or expired anything, or took no lease that
			// ends by itself, proves little. A loaded machine can starve a short run of such
			// moments: the run is repeated, each time twice as long, before that fails the test.
			timedLeases := q.FixedLease == 0 || q.FixedLease <= program.MaxNearLease
			tooLittle := func(c program.Counts) bool {
				return c.Completions == 0 || c.RejectedCompletions == 0 || c.Expiries == 0 || c.TimedClaims == 0 && timedLeases || c.Locks == 0 && q.CanLock()
			}
			for try, d := 0, *stressFor; ; try, d = try+1, 2*d {
				res, err := stress.Run(context.Background(), in, stress.Config{Duration: d, PassDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				checkMeasures(t, res)
				verdicts := verdict.NewTable(q.Shape(), verdict.ConcurrentProperties...)
				verdicts.NotPromised[model.PFencing] = int(res.Counts.NotPromised)
				if res.Failed() {
					v := res.Verdict
					if v.Violation != nil {
						board.violated(t, q, v.Violation.Property)
					}
					// Judging a user's queue, the failing job's operations (a history, not a
					// reduced program) stay in the report, so that the output leads with the
					// reduced programs of the other modes.
					explained := indent(firstLines(v.Explanation, 24))
					if os.Getenv(sut.EnvSQLDir) != "" {
						explained = ""
					}
					t.Fatalf("%s\n%sstress seed %d, %d operations; the history, the failing job's timeline and the measures page: %s",
						v, explained, res.Seed, res.Counts.Ops, res.ReportDir)
				}
				t.Logf("%s (checked in %v)\nverdict on %s:\n%s", res, res.CheckTime.Round(time.Millisecond), q.Name, verdicts)
				switch {
				case !tooLittle(res.Counts):
					return
				case try == 2:
					t.Fatalf("three runs, the last of %v, exercised too little to be a verdict: %s", d, res.Counts)
				}
				t.Logf("the run exercised too little to be a verdict (%s); again, for %v", res.Counts, 2*d)
			}
		})
	}
}

// checkMeasures: a stress run's report folder has its measures page, and the measures agree
// with the run's own counts (a second way of counting the same history).
func checkMeasures(t *testing.T, res *stress.Result) {
	t.Helper()
	for _, f := range []string{report.MeasuresFile, report.MeasuresJSONFile, report.HistoryFile} {
		if st, err := os.Stat(filepath.Join(res.ReportDir, f)); err != nil || st.Size() == 0 {
			t.Errorf("the run's report folder has no %s: %v", f, err)
		}
	}
	m, c := res.Measures, res.Counts
	if m == nil {
		t.Fatal("the run has no measures")
	}
	got := []int64{int64(m.Completions), int64(m.RejectedCompletions), int64(m.Attempts.Claims), int64(len(m.Faults))}
	want := []int64{c.Completions, c.RejectedCompletions, c.Claims, int64(len(res.History.Faults))}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("measures count completions, rejected completions, claims, fault windows %v; the run's counts say %v", got, want)
	}
	if m.ClaimLatency.Count == 0 || m.ClaimLatency.P50 <= 0 || m.ClaimLatency.P99 < m.ClaimLatency.P50 || m.ReadyAge.Count == 0 {
		t.Errorf("claim latency %+v, ready-job age %+v: a run that claimed jobs measured none", m.ClaimLatency, m.ReadyAge)
	}
	if n := expiriesOfRunningJobs(res.History); n > 0 && m.ExpiredRunningPeak == 0 {
		t.Errorf("%d expiries ended the lease of a job still running, yet no job was ever counted running on an expired lease", n)
	}
}

// expiriesOfRunningJobs counts, a second way, the expiries that ended a running job's lease:
// each that returned after a claim of its job returned and before the job's next claim or
// accepted completion did. An expiry of a job no worker held proves nothing of the measure: on
// a loaded machine every expiry of a run can land so.
func expiriesOfRunningJobs(h *history.History) int {
	type event struct {
		at   int64
		kind model.OpKind
	}
	byJob := map[int64][]event{}
	for _, o := range h.Ops {
		if o.Return == history.Never || o.Output.Outcome != model.Returned {
			continue
		}
		switch k := o.Input.Kind; {
		case k == model.OpClaim && o.Output.Found:
			byJob[o.Output.Job] = append(byJob[o.Output.Job], event{o.Return, k})
		case k == model.OpComplete && o.Output.Rows > 0, k == model.OpExpire:
			byJob[o.Input.Job] = append(byJob[o.Input.Job], event{o.Return, k})
		}
	}
	n := 0
	for _, evs := range byJob {
		sort.SliceStable(evs, func(a, b int) bool { return evs[a].at < evs[b].at })
		running := false
		for i, e := range evs {
			switch e.kind {
			case model.OpClaim:
				running = true
			case model.OpComplete:
				running = false
			case model.OpExpire:
				if running && (i+1 == len(evs) || evs[i+1].at > e.at) {
					n++
				}
			}
		}
	}
	return n
}

// TestLinearScheduled draws programs and interleavings with rapid for every queue under
// judgement; a failure replays from its fail file and shrinks like any rapid failure.
func TestLinearScheduled(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			in := suttest.Install(t, q)
			cfg := schedule.Config{Name: q.Name}
			s := schedule.NewScheduler(ctx, in, cfg)
			defer s.Close()
			// A failure is kept as a scheduled program in the corpus, where TestPropPrograms
			// replays it on every go test, after its operations are reduced.
			var first string // the first failing run's program, saved before any shrinking
			notPromised := 0
			check := func(rt *rapid.T) {
				returned := false
				defer func() {
					if f := s.Last(); !returned && first == "" && f != nil {
						first = saveFirst(t, f)
					}
				}()
				s.Property(rt)
				notPromised += int(s.Counts.NotPromised)
				returned = true
			}
			if failed, log := quietRapid(t, check); failed {
				f := s.Last()
				if f == nil {
					t.Fatalf("a scheduled run failed without breaking a property (rapid's report: %s)", log)
				}
				s.Close()
				reduced := schedule.Reduce(ctx, in, cfg, f, *reduceFor)
				saved := saveFinding(t, reduced, log+"; the reduced run's report: "+reduced.ReportDir)
				if saved != first && first != "" {
					_ = os.Remove(first) // the reduced program replaces it
				}
				board.found(t, q, reduced, saved)
				return
			}
			verdicts := verdict.NewTable(q.Shape(), verdict.ConcurrentProperties...)
			verdicts.NotPromised[model.PFencing] = notPromised
			t.Logf("verdict on %s:\n%s", q.Name, verdicts)
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
