package lockorder_test

import (
	"context"
	"strings"
	"testing"

	"pgqcheck/lockorder"
	"pgqcheck/model"
	"pgqcheck/sut"
	"pgqcheck/sut/suttest"
)

func install(t *testing.T, variant string) *sut.Installed {
	t.Helper()
	q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/lockorder/"+variant))
	if err != nil {
		t.Fatal(err)
	}
	return suttest.Install(t, q)
}

func run(t *testing.T, in *sut.Installed, p lockorder.RetryPolicy) *lockorder.Outcome {
	t.Helper()
	out, err := lockorder.Run(context.Background(), in, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("trace:\n%s", strings.Join(out.Trace, "\n"))
	return out
}

// Effects that lock the two accounts in opposite orders deadlock; the finding names both
// workers' effects and both jobs.
func TestOppositeOrdersDeadlock(t *testing.T) {
	out := run(t, install(t, "opposite"), lockorder.NoRetry)
	f := out.Finding
	if f == nil || f.Property() != model.PNoErrors || len(out.Deadlocks) != 1 {
		t.Fatalf("no deadlock finding (%v, %d deadlocks)", f, len(out.Deadlocks))
	}
	for _, want := range []string{"40P01", "job 2", "job 3", "w1", "w2", "effect.sql"} {
		if !strings.Contains(f.Verdict(), want) {
			t.Errorf("the finding does not name %q: %s", want, f.Verdict())
		}
	}
	t.Logf("%s", f)
}

// Under a bounded retry policy the aborted transaction runs again: every job ends done with
// exactly one effect, the deadlock still reported beside it.
func TestRetriedDeadlockKeepsOneEffect(t *testing.T) {
	out := run(t, install(t, "opposite"), lockorder.Bounded)
	if out.Finding != nil {
		t.Fatalf("the retried run broke a promise:\n%s", out.Finding)
	}
	if len(out.Deadlocks) != 1 || out.Retries != 1 {
		t.Fatalf("%d deadlocks, %d retries; want one of each", len(out.Deadlocks), out.Retries)
	}
	if len(out.Effects) != 3 {
		t.Errorf("the business table holds %v, want one effect of each of 3 jobs", out.Effects)
	}
	t.Logf("retried %s", out.Deadlocks[0])
}

// Effects that lock the accounts in one order wait for each other, never in a cycle.
func TestOneOrderPasses(t *testing.T) {
	out := run(t, install(t, "one-order"), lockorder.NoRetry)
	if out.Finding != nil || len(out.Deadlocks) != 0 {
		t.Fatalf("a queue locking in one order failed:\n%v", out.Finding)
	}
	if len(out.Effects) != 3 {
		t.Errorf("the business table holds %v, want one effect of each of 3 jobs", out.Effects)
	}
}
