package stress

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestStressProxyFaults: stress traffic whose chaos goroutine arms proxy faults often, on the
// seed queue (TestLinearStress runs every queue judged with the default mix, proxy faults in
// it). Every kind hits a statement and is in the history's faults; a dropped reply or a cut
// leaves operations with unknown outcomes; and the history checks.
func TestStressProxyFaults(t *testing.T) {
	defer func(c generate.Weights) { generate.ChaosWeights = c }(generate.ChaosWeights)
	generate.ChaosWeights = generate.Weights{"net": 30, "expire": 30, "snapshot": 5, "rest": 35}
	for _, name := range []string{sut.DefaultQueue} {
		t.Run(name, func(t *testing.T) {
			in := suttest.Install(t, sut.MustBuiltin(name))
			// Which faults hit is drawn: a loaded machine runs fewer statements in the same time,
			// and a short run may draw no stall. A run in which some kind never hit is repeated,
			// twice as long each time, before that fails the test.
			var res *Result
			for try, d := 0, 700*time.Millisecond; ; try, d = try+1, 2*d {
				var err error
				if res, err = Run(context.Background(), in, Config{Duration: d, ReportDir: t.TempDir()}); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s (check %v)", res, res.CheckTime)
				if res.Failed() {
					t.Fatalf("%s\n%s", res, res.Verdict.Explanation)
				}
				c := res.Counts
				hit := fmt.Sprintf("proxy faults that hit in %v: %d dropped, %d cut, %d delayed, %d stalled", d, c.DroppedReplies, c.Cuts, c.Delays, c.Stalls)
				if c.DroppedReplies > 0 && c.Cuts > 0 && c.Delays > 0 && c.Stalls > 0 {
					break
				}
				if try == 2 {
					t.Fatalf("%s; want each kind, in three runs", hit)
				}
				t.Logf("%s; again, for %v", hit, 2*d)
			}
			c := res.Counts
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

// TestSplitMutantsNeedFaults: the two split mutants (testdata/mutants/claim-split-lease,
// complete-split-statements) hold under stress traffic without faults, and proxy faults
// alone (no cancels, terminations or row locks) catch them: they are bugs only a lost
// connection between their two halves shows.
func TestSplitMutantsNeedFaults(t *testing.T) {
	suttest.SelfCheck(t, "./internal/linear/stress")
	defer func(c generate.Weights) { generate.ChaosWeights = c }(generate.ChaosWeights)
	for _, name := range []string{"claim-split-lease", "complete-split-statements"} {
		t.Run(name, func(t *testing.T) {
			q, err := sut.LoadDir(suttest.ModuleDir(t, filepath.Join("testdata", "mutants", name)))
			if err != nil {
				t.Fatal(err)
			}
			in := suttest.Install(t, q)
			res, err := Run(context.Background(), in, Config{Duration: 300 * time.Millisecond, NoChaos: true, ReportDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() {
				t.Fatalf("without faults the mutant should hold: %s", res)
			}
			generate.ChaosWeights = generate.Weights{"net": 30, "expire": 30, "snapshot": 10, "rest": 30}
			// What catches the mutant is a connection lost between a completion's two halves:
			// a dropped reply or a cut after an accepted completion. How many such faults hit
			// in a round depends on the machine's load, so rounds run until that many have
			// hit (or a bound on rounds), not for a fixed time.
			var ended int64
			for round := 1; ; round++ {
				res, err = Run(context.Background(), in, Config{Duration: 700 * time.Millisecond, ReportDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				ended += res.Counts.DroppedReplies + res.Counts.Cuts
				if res.Failed() {
					t.Logf("caught in round %d, after %d dropped replies and cuts: %s", round, ended, res.Verdict.Violation)
					break
				}
				if ended >= LostFaultsToCatch || round == 60 {
					t.Fatalf("proxy faults did not catch %s in %d rounds, %d dropped replies and cuts: %s", name, round, ended, res)
				}
			}
			if c := res.Counts; c.Terminates+c.Interrupts+c.Locks > 0 {
				t.Fatalf("faults other than the proxy's were injected: %s", c)
			}
		})
	}
}
