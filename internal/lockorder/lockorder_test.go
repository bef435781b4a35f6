package lockorder_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/pgqcheck/pgqcheck/internal/goqueues" // the Go mutant whose effect escapes its transaction
	"github.com/pgqcheck/pgqcheck/internal/lockorder"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// install installs a folder under the module's testdata: the mutant that locks in opposite
// orders, or the variant that locks in one.
func install(t *testing.T, folder string) *sut.Installed {
	t.Helper()
	q, err := sut.LoadDir(suttest.ModuleDir(t, filepath.Join("testdata", folder)))
	if err != nil {
		t.Fatal(err)
	}
	return suttest.Install(t, q)
}

const (
	opposite = "mutants/lock-order-opposite"
	oneOrder = "lockorder/one-order"
)

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
	out := run(t, install(t, opposite), lockorder.NoRetry)
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
	out := run(t, install(t, opposite), lockorder.Bounded)
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
	out := run(t, install(t, oneOrder), lockorder.NoRetry)
	if out.Finding != nil || len(out.Deadlocks) != 0 {
		t.Fatalf("a queue locking in one order failed:\n%v", out.Finding)
	}
	if len(out.Effects) != 3 {
		t.Errorf("the business table holds %v, want one effect of each of 3 jobs", out.Effects)
	}
}

// The retry check can fail: where the aborted transaction's effect escaped it (a Go mutant
// whose record commits on a connection of its own), the retried transaction leaves a second
// effect of its job.
func TestRetryDuplicatesAnEscapedEffect(t *testing.T) {
	q, ok := sut.Registered("lock-order-effect-escapes")
	if !ok {
		t.Fatal("no Go queue lock-order-effect-escapes")
	}
	out := run(t, suttest.Install(t, q), lockorder.Bounded)
	if out.Finding == nil || out.Finding.Property() != model.PEffects || out.Retries != 1 {
		t.Fatalf("the retried transaction's duplicate went unseen (finding %v, %d retries)", out.Finding, out.Retries)
	}
	t.Logf("%s", out.Finding.Verdict())
}
