package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/hunt"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/linear/stress"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// stressTries is how many stress runs, each twice as long as the last, may pass before one
// that exercised too little to be a verdict fails the test.
const stressTries = 3

// Stress is the Linear suite's free-running traffic with faults on q: every job's history
// must be linearizable and the drained queue must account for every job exactly once. A run
// that never reclaimed, refused or expired anything, or took no lease that ends by itself,
// proves little; a loaded machine can starve a short run of such moments, so the run is
// repeated, each time twice as long, before that fails the test.
func Stress(t *testing.T, q *sut.Queue, c Config) {
	in := c.Install(t, q)
	timedLeases := q.FixedLease == 0 || q.FixedLease <= program.MaxNearLease
	tooLittle := func(n program.Counts) bool {
		return n.Completions == 0 || n.RejectedCompletions == 0 || n.Expiries == 0 || n.TimedClaims == 0 && timedLeases || n.Locks == 0 && q.Can().Lock
	}
	for try, d := 0, c.stressFor(); ; try, d = try+1, 2*d {
		res, err := stress.Run(context.Background(), in, stress.Config{Duration: d, Seed: c.Seed, PassDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		checkMeasures(t, res)
		verdicts := verdict.NewTable(q.Shape(), verdict.ConcurrentProperties...)
		verdicts.NotPromised[model.PFencing] = int(res.Counts.NotPromised)
		if res.Failed() {
			v := res.Verdict
			if v.Violation != nil {
				c.Board.Violated(t.Name(), q, v.Violation.Property)
			}
			explained := indent(firstLines(v.Explanation, 24))
			if c.BriefStress {
				explained = ""
			}
			t.Fatalf("%s\n%sstress seed %d, %d operations; the history, the failing job's timeline and the measures page: %s",
				v, explained, res.Seed, res.Counts.Ops, res.ReportDir)
		}
		t.Logf("%s (checked in %v)\nverdict on %s:\n%s", res, res.CheckTime.Round(time.Millisecond), q.Name, verdicts)
		switch {
		case !tooLittle(res.Counts):
			c.Board.Judged(q, verdict.ConcurrentProperties...)
			c.Board.NotPromised(q, model.PFencing, int(res.Counts.NotPromised))
			return
		case try == stressTries-1:
			t.Fatalf("%d runs, the last of %v, exercised too little to be a verdict: %s", stressTries, d, res.Counts)
		}
		t.Logf("the run exercised too little to be a verdict (%s); again, for %v", res.Counts, 2*d)
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

// Scheduled is the Linear suite's scheduled interleavings on q: rapid draws programs and the
// order their sessions' statements run in, every run's history is checked, and a failure
// shrinks like any rapid failure, is reduced, and is kept as a scheduled program in the corpus.
func Scheduled(t *testing.T, q *sut.Queue, c Config) {
	ctx := context.Background()
	in := c.Install(t, q)
	search := hunt.NewScheduled(ctx, in, q.Name, "")
	defer search.Close()
	search.Reduce = c.reduce()
	var first string // the first failing run's program, saved before any shrinking
	search.OnFailure = func(f *verdict.Finding) {
		if first == "" {
			first = c.saveFirst(t, q, f)
		}
	}
	var ran hunt.Sum
	f, st, err := search.Search(ctx, c.settings(0, 1), &ran, true)
	switch {
	case err != nil:
		t.Fatal(err)
	case f != nil:
		c.found(t, q, f, first, st)
		return
	}
	verdicts := verdict.NewTable(q.Shape(), verdict.ConcurrentProperties...)
	verdicts.NotPromised[model.PFencing] = int(ran.NotPromised)
	c.Board.Judged(q, verdict.ConcurrentProperties...)
	c.Board.NotPromised(q, model.PFencing, int(ran.NotPromised))
	t.Logf("verdict on %s:\n%s", q.Name, verdicts)
}
