package pgqcheck_test

import (
	"context"
	"flag"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/verdict"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/testflags"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

var reduceFor = flag.Duration("pgqcheck.reduce", 20*time.Second, "how long a failure's program may be reduced after rapid's shrinking")

// TestPropQueue drives the model and the real queue side by side, one operation at a time,
// for every queue under judgement (the built-ins, or PGQCHECK_SQL_DIR alone), each queue in a
// database of its own, side by side.
func TestPropQueue(t *testing.T) {
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			propQueue(t, q, false)
		})
	}
}

// TestPropLeaseTime adds real time: claims with leases of drawn length (100 ms to 1 s), pauses
// to just before or just after a lease's end followed by another worker's claim or the
// holder's completion, plain pauses, and claim transactions that wait before claiming and
// before completing (where now() and clock_timestamp() part). Leases must be computed from and
// compared with the database clock (property 8); the model judges each answer by the window
// of database time its statement ran in. Pauses cost wall time, hence a property of its own
// with fewer checks (a fifth, unless the user chose), and queues judged side by side: a run
// mostly sleeps, each queue has a database of its own, and nothing depends on another's timing.
func TestPropLeaseTime(t *testing.T) {
	// Set once for every subtest, and restored after the last (a parallel subtest runs after
	// this function has returned).
	t.Cleanup(fewerChecks(5))
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			propQueue(t, q, true)
		})
	}
}

func propQueue(t *testing.T, q *sut.Queue, realTime bool) {
	ctx := context.Background()
	env := newEnv(t, q)
	var first string // the first failing run's program, saved before any shrinking
	prop := func(rt *rapid.T) {
		returned := false
		defer func() {
			// A failure is never lost to a timeout while rapid shrinks it: the first failing
			// run is saved and printed at once, and replaced by its reduction later.
			if !returned && first == "" {
				if f := sequential.Unreduced(env); f != nil {
					first = saveFirst(t, f)
				}
			}
		}()
		sequential.BeginRun(ctx, rt, env)
		rt.Repeat(sequential.StateMachine(ctx, env, realTime))
		returned = true
	}
	// A real-time property that let no lease run out by itself judged nothing in real time.
	// (A queue that fixes a lease longer than a run has only real pauses to judge.) Whether the
	// draws reached real time is chance: on a queue where few of the real-time kinds apply (a
	// transaction-bound one: a plain pause is one draw in about sixteen) a round of checks now
	// and then draws none, so the checks run again, up to three rounds, before that fails.
	timedLeases := q.FixedLease == 0 || q.FixedLease <= program.MaxNearLease
	reachedRealTime := func() bool {
		return !realTime || (!timedLeases || env.Counts.TimedClaims > 0) && env.Counts.RealPauses > 0
	}
	const rounds = 3
	for round := 1; ; round++ {
		// env holds rapid's final replay of its shrunk case once the property failed.
		if failed, log := quietRapid(t, prop); failed {
			f := sequential.FindingOf(ctx, env, *reduceFor)
			if f == nil {
				t.Fatalf("the property failed in the harness, not on the queue: %v (rapid's report: %s)", env.Last, log)
			}
			saved := saveFinding(t, f, log)
			if saved != first && first != "" {
				_ = os.Remove(first) // the reduced program replaces it
			}
			board.found(t, q, f, saved)
			return
		}
		if reachedRealTime() || round == rounds {
			break
		}
		t.Logf("round %d of %d checks reached no real time (%d timed claims, %d real pauses): checking again", round, rapidChecks(), env.Counts.TimedClaims, env.Counts.RealPauses)
	}
	t.Logf("exercised: %s", env.Counts)
	verdicts := verdict.NewTable(q.Shape(), verdict.SequentialProperties...)
	if n := len(env.NotPromised); n > 0 {
		began := time.Now()
		f := sequential.ReduceNotPromised(ctx, env, env.NotPromised, *reduceFor)
		took := time.Since(began).Round(time.Millisecond)
		verdicts.NotPromised[f.Property()] = n
		t.Logf("not promised: %d %s observed; reduced in %v:\n%s", n, verdict.NotPromisedWhat(f.Property(), n), took, f)
		if len(f.Program.Ops) > 6 {
			t.Errorf("the not-promised finding reduced to %d operations in %v (-pgqcheck.reduce=%v); the stale completion needs at most 5", len(f.Program.Ops), took, *reduceFor)
		}
	} else if !q.Shape().Promised(model.PFencing) {
		// Measured, or the table's "not promised: 0" would say the queue fences when the draws
		// merely never tried it.
		t.Errorf("%d checks on a queue that does not promise fencing saw no stale completion", rapidChecks())
	}
	t.Logf("verdict on %s:\n%s", q.Name, verdicts)
	if !reachedRealTime() {
		t.Errorf("no claim with a lease of its own length, or no real pause, ran in %d rounds of %d checks: the draws no longer reach real time", rounds, rapidChecks())
	}
}

func rapidChecks() int {
	n, _ := strconv.Atoi(flag.Lookup("rapid.checks").Value.String())
	return n
}

// saveFirst saves a failing run's program as soon as it is found, before shrinking, and returns
// where: the case survives whatever happens to the rest of the test.
func saveFirst(t *testing.T, f *verdict.Finding) string {
	path, _, err := corpus.Save(".", f, t.Name())
	if err != nil {
		return ""
	}
	return path
}

// saveFinding fails the test with a finding, its reduced program first, and saves the program
// where TestPropPrograms replays it on every `go test`: the regression corpus. A replay of a
// failure already saved adds nothing. rest names where the rest of the failure is kept (the
// unreduced programs, rapid's draws). It returns the file that holds the program.
func saveFinding(t *testing.T, f *verdict.Finding, rest string) string {
	path, fresh, err := corpus.Save(".", f, t.Name())
	if err != nil {
		t.Errorf("%s(the program could not be saved: %v; unreduced programs and rapid's draws: %s)", f, err, rest)
		return ""
	}
	replay := "go test -run PropPrograms ."
	if dir := os.Getenv(sut.EnvSQLDir); dir != "" {
		replay = sut.EnvSQLDir + "=" + dir + " " + replay
	}
	verb := "saved as"
	if !fresh {
		verb = "already saved as"
	}
	t.Errorf("%s%s %s (replays with %s); unreduced programs and rapid's draws: %s", f, verb, path, replay, rest)
	return path
}

func newEnv(t testing.TB, q *sut.Queue) *sequential.Env {
	in := suttest.Install(t, q)
	env, err := sequential.NewEnv(context.Background(), in, program.Workers, program.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}

// fewerChecks divides rapid's number of checks by n for one property, unless -rapid.checks was
// given on the command line, and returns the function that restores it.
func fewerChecks(n int) (restore func()) {
	return testflags.Defaults(map[string]string{"rapid.checks": strconv.Itoa(max(1, rapidChecks()/n))})
}
