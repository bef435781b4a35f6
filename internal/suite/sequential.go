package suite

import (
	"context"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/hunt"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// sequentialRounds is how many rounds of checks a real-time search runs before it gives up
// reaching real time: on a queue where few of the real-time kinds apply (a transaction-bound
// one: a plain pause is one draw in about sixteen) a round now and then draws none.
const sequentialRounds = 3

// Sequential is the Prop suite on q: the model and the real queue side by side, one operation
// at a time, under rapid. With realTime (PropLeaseTime), claims take leases of drawn length
// and pauses run to just before or after a lease's end: leases must be computed from and
// compared with the database clock (property 8), each answer judged by the window of database
// time its statement ran in; such a search runs a fifth of the checks, since a run mostly
// sleeps.
func Sequential(t *testing.T, q *sut.Queue, c Config, realTime bool) {
	ctx := context.Background()
	search, divide := c.sequential(t, q, realTime)
	defer search.Close()
	var first string // the first failing run's program, saved before any shrinking
	search.OnFailure = func(f *verdict.Finding) {
		if first == "" {
			first = c.saveFirst(t, q, f)
		}
	}
	notPromised := map[model.Property]int{}
	search.NotPromised = func(p model.Property, seen int, reduce func() *verdict.Finding) {
		if notPromised[p] == 0 {
			notPromisedFinding(t, p, seen, reduce, c.reduce())
		}
		notPromised[p] += seen
	}
	// A real-time search that let no lease run out by itself judged nothing in real time. (A
	// queue that fixes a lease longer than a run has only real pauses to judge.)
	timedLeases := q.FixedLease == 0 || q.FixedLease <= program.MaxNearLease
	var ran hunt.Sum
	reachedRealTime := func() bool {
		return !realTime || (!timedLeases || ran.TimedClaims > 0) && ran.RealPauses > 0
	}
	for round := 1; ; round++ {
		f, st, err := search.Search(ctx, c.settings(round-1, divide), &ran)
		switch {
		case err != nil:
			t.Fatalf("the property failed in the harness, not on the queue: %v", err)
		case f != nil:
			c.found(t, q, f, first, st)
			return
		}
		if reachedRealTime() || round == sequentialRounds {
			break
		}
		t.Logf("round %d of %d checks reached no real time (%d timed claims, %d real pauses): checking again", round, c.checks(divide), ran.TimedClaims, ran.RealPauses)
	}
	t.Logf("exercised: %s", ran.Counts)
	verdicts := verdict.NewTable(q.Shape(), verdict.SequentialProperties...)
	for p, n := range notPromised {
		verdicts.NotPromised[p] = n
		c.Board.NotPromised(q, p, n)
	}
	c.Board.Judged(q, verdict.SequentialProperties...)
	if len(notPromised) == 0 && !q.Shape().Promised(model.PFencing) {
		// Measured, or the table's "not promised: 0" would say the queue fences when the draws
		// merely never tried it.
		t.Errorf("%d checks on a queue that does not promise fencing saw no stale completion", c.checks(divide))
	}
	t.Logf("verdict on %s:\n%s", q.Name, verdicts)
	if !reachedRealTime() {
		t.Errorf("no claim with a lease of its own length, or no real pause, ran in %d rounds of %d checks: the draws no longer reach real time", sequentialRounds, c.checks(divide))
	}
}

// notPromisedFinding reduces the first thing a search saw the queue do that it does not
// promise, and shows it: counted and shown, it fails nothing, but a reduction that leaves
// more than the stale completion needs is the suite's own fault.
func notPromisedFinding(t *testing.T, p model.Property, seen int, reduce func() *verdict.Finding, budget time.Duration) {
	began := time.Now()
	f := reduce()
	took := time.Since(began).Round(time.Millisecond)
	t.Logf("not promised: %d %s observed; reduced in %v:\n%s", seen, verdict.NotPromisedWhat(p, seen), took, f)
	if len(f.Program.Ops) > 6 {
		t.Errorf("the not-promised finding reduced to %d operations in %v (reduce budget %v); the stale completion needs at most 5", len(f.Program.Ops), took, budget)
	}
}

// Find is one sequential search on q, as Sequential runs it, with its finding as a value: nil
// when every check held. A test that expects a failure (a mutant's) asks for it so; an error of
// the harness fails tb.
func Find(tb testing.TB, q *sut.Queue, c Config, realTime bool) *verdict.Finding {
	tb.Helper()
	search, divide := c.sequential(tb, q, realTime)
	defer search.Close()
	f, _, err := search.Search(context.Background(), c.settings(0, divide), &hunt.Sum{})
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// sequential is a sequential search on q installed in a database of its own, and what its
// checks are divided by: a real-time search runs a fifth of them, since a run mostly sleeps.
func (c Config) sequential(tb testing.TB, q *sut.Queue, realTime bool) (*hunt.Sequential, int) {
	tb.Helper()
	search, err := hunt.NewSequential(context.Background(), c.Install(tb, q))
	if err != nil {
		tb.Fatal(err)
	}
	search.RealTime = realTime
	search.ReduceFor(c.reduce())
	if realTime {
		return search, 5
	}
	return search, 1
}
