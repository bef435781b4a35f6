package linear

import (
	"context"
	"testing"
	"time"

	"pgqcheck/faultproxy"
	"pgqcheck/model"
	"pgqcheck/program"
	"pgqcheck/sut"
	"pgqcheck/sut/suttest"
)

// TestStressProxyFaults: stress traffic whose chaos goroutine arms proxy faults often, on each
// correct built-in queue. Every kind hits a statement and is in the history's faults; a dropped
// reply or a cut leaves operations with unknown outcomes; and the history checks.
func TestStressProxyFaults(t *testing.T) {
	defer func(c program.Weights) { ChaosWeights = c }(ChaosWeights)
	ChaosWeights = program.Weights{"net": 30, "expire": 30, "snapshot": 5, "rest": 35}
	for _, name := range []string{"seed", "subquery", "split"} {
		t.Run(name, func(t *testing.T) {
			in := suttest.Install(t, sut.MustBuiltin(name))
			res, err := Stress(context.Background(), in, StressConfig{Duration: 700 * time.Millisecond, ReportDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (check %v)", res, res.CheckTime)
			if res.Failed() {
				t.Fatalf("%s\n%s", res, res.Verdict.Explanation)
			}
			c := res.Counts
			if c.DroppedReplies == 0 || c.Cuts == 0 || c.Delays == 0 || c.Stalls == 0 {
				t.Fatalf("proxy faults that hit: %d dropped, %d cut, %d delayed, %d stalled; want each kind", c.DroppedReplies, c.Cuts, c.Delays, c.Stalls)
			}
			if c.Unknown == 0 {
				t.Fatalf("no operation has an unknown outcome after %d dropped replies and %d cuts", c.DroppedReplies, c.Cuts)
			}
			kinds := map[string]bool{}
			for _, f := range res.History.Faults {
				kinds[f.Kind] = true
			}
			for _, k := range faultproxy.Kinds {
				if !kinds[string(k)] {
					t.Errorf("no %s in the history's faults", k)
				}
			}
			unknownClaims := 0
			for _, o := range res.History.Ops {
				if o.Input.Kind == model.OpClaim && o.Output.Outcome == model.Unknown {
					unknownClaims++
				}
			}
			t.Logf("%d claims with unknown outcomes", unknownClaims)
		})
	}
}
