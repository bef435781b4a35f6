package stress

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestStressEdgeTransactions: workers that keep transactions open across their timed leases'
// edges (completing after the edge, or claiming after it) hold on the seed queue, and catch the
// mutant whose completion compares the lease with now(), the transaction's start, which only
// such a transaction shows. (Its claim-side twin is left to sequential and scheduled programs:
// a stress claim skips locked rows, so finding no job, or a younger one, judges nothing.)
func TestStressEdgeTransactions(t *testing.T) {
	suttest.SelfCheck(t, "./internal/linear/stress")
	defer func(l, e, c generate.Weights) {
		generate.LeaseWeights, generate.EdgeTxnWeights, generate.ChaosWeights = l, e, c
	}(generate.LeaseWeights, generate.EdgeTxnWeights, generate.ChaosWeights)
	generate.LeaseWeights = generate.Weights{"timed": 1}
	generate.EdgeTxnWeights = generate.Weights{"complete across its end": 1, "claim across its end": 1}
	generate.ChaosWeights = generate.Weights{"snapshot": 1, "rest": 9}
	stress := func(t *testing.T, q *sut.Queue, d time.Duration) *Result {
		in := suttest.Install(t, q)
		res, err := Run(context.Background(), in, Config{Workers: 4, Duration: d, ReportDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	t.Run("seed", func(t *testing.T) {
		// A loaded machine can starve a second of such moments: the run is repeated, each time
		// twice as long, up to three times.
		for try, d := 1, time.Second; ; try, d = try+1, 2*d {
			res := stress(t, sut.MustBuiltin(sut.DefaultQueue), d)
			if res.Failed() {
				t.Fatalf("%s\n%s", res, res.Verdict.Explanation)
			}
			c := res.Counts
			if c.TxnClaims > 0 && c.RejectedCompletions > 0 && c.RealPauses > 0 {
				return
			}
			if try == 3 {
				t.Fatalf("%s: in three runs, the last of %v, no transaction waited across a lease's edge and had its completion refused", c, d)
			}
			t.Logf("%v exercised too little (%s); again for %v", d, c, 2*d)
		}
	})
	t.Run("complete-predicate-now", func(t *testing.T) {
		q, err := sut.LoadDir(suttest.ModuleDir(t, filepath.Join("testdata", "mutants", "complete-predicate-now")))
		if err != nil {
			t.Fatal(err)
		}
		for round := 1; ; round++ {
			res := stress(t, q, time.Second)
			if res.Failed() {
				if v := res.Verdict.Violation; v == nil || v.Property != model.PFencing {
					t.Fatalf("caught, but not by %s: %s", model.PFencing, res)
				}
				t.Logf("caught in round %d: %s", round, res.Verdict.Violation)
				return
			}
			if round == 5 {
				t.Fatalf("transactions across lease edges did not catch the mutant in %d rounds: %s", round, res)
			}
		}
	})
}
