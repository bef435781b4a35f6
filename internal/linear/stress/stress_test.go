package stress

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestStressRealTime: stress workers that claim with timed leases and wait until just past
// their ends lose their jobs to time alone (chaos only snapshots here): other workers reclaim
// them, the late completions are refused, snapshots see leases over, and the history, every
// claim carrying its lease and every statement its window, checks on the seed queue.
func TestStressRealTime(t *testing.T) {
	defer func(l, h, c generate.Weights) {
		generate.LeaseWeights, generate.TimedHoldWeights, generate.ChaosWeights = l, h, c
	}(generate.LeaseWeights, generate.TimedHoldWeights, generate.ChaosWeights)
	generate.LeaseWeights = generate.Weights{"timed": 1}
	generate.TimedHoldWeights = generate.Weights{"until after its end": 1}
	generate.ChaosWeights = generate.Weights{"snapshot": 1, "rest": 9}
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	res, err := Run(context.Background(), in, Config{Workers: 6, Duration: time.Second, ReportDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.Failed() {
		t.Fatalf("%s\n%s", res, res.Verdict.Explanation)
	}
	c := res.Counts
	if c.TimedClaims == 0 || c.RealPauses == 0 || c.PausedMillis < 100 || c.RejectedCompletions == 0 {
		t.Fatalf("%d timed claims, %d pauses (%d ms), %d refused completions: the workers did not wait out their leases", c.TimedClaims, c.RealPauses, c.PausedMillis, c.RejectedCompletions)
	}
	byTime, overSeen := 0, 0
	byJob := map[int64][]history.Op{}
	for _, o := range res.History.Ops {
		if id, ok := model.JobOf(o.Input, o.Output); ok {
			byJob[id] = append(byJob[id], o)
		}
		if o.Input.Kind == model.OpClaim && o.Output.Found && o.Input.At.To == model.Never && o.Output.Outcome == model.Returned {
			t.Errorf("a claim that returned has no window: %+v", o)
		}
		if o.Input.Kind == model.OpObserve && o.Output.State == model.Running && !o.Output.Live {
			overSeen++
		}
	}
	for _, ops := range byJob {
		sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
		var held *history.Op // the claim whose lease the job is under, when no expiry came since
		for i, o := range ops {
			switch {
			case o.Input.Kind == model.OpExpire:
				held = nil
			case o.Input.Kind == model.OpClaim && o.Output.Found && o.Output.Outcome == model.Returned:
				if held != nil && held.Input.Lease != 0 && held.Input.Lease != program.LongLease && o.Output.Gen == held.Output.Gen+1 {
					byTime++
				}
				held = &ops[i]
			}
		}
	}
	if byTime == 0 {
		t.Errorf("no claim reclaimed a job whose lease ran out by time")
	}
	if overSeen == 0 {
		t.Errorf("no snapshot saw a running job's lease over")
	}
	t.Logf("%d reclaims by time, %d observations of a lease over", byTime, overSeen)
}

// A check that runs out of time is no verdict on the queue: the history is checked again with
// four times as long before the run reports it inconclusive.
func TestStressRechecksACheckOutOfTime(t *testing.T) {
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	res, err := Run(context.Background(), in, Config{Duration: 300 * time.Millisecond, ReportDir: t.TempDir(), CheckTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Rechecked || !res.Verdict.Inconclusive || !strings.Contains(res.String(), "checked twice") {
		t.Fatalf("a check given 1 ns: rechecked %v, inconclusive %v: %s", res.Rechecked, res.Verdict.Inconclusive, res)
	}
	res, err = Run(context.Background(), in, Config{Duration: 300 * time.Millisecond, ReportDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rechecked || res.Failed() {
		t.Fatalf("a check given its default time: rechecked %v: %s", res.Rechecked, res)
	}
}
