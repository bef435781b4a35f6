package sequential_test

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

const ms = time.Millisecond

// TestCounts runs a program through every kind of step on the seed queue, the model checking
// each answer, and compares what Env counted with what the program did.
func TestCounts(t *testing.T) {
	ctx := context.Background()
	env, err := sequential.NewEnv(ctx, suttest.Install(t, sut.MustBuiltin("seed")), program.Workers, program.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	run := func(steps ...program.Op) {
		t.Helper()
		for _, op := range steps {
			if err := env.Step(ctx, op); err != nil {
				t.Fatalf("%s: %v\n%s", op, err, env.Program())
			}
		}
	}
	run(
		program.Enqueue{N: 2},               // jobs 1 and 2
		program.Lock{S: "locker0", Job: 1},  // job 1 locked
		program.Claim{S: "w0"},              // job 2
		program.Interrupt{S: "locker0"},     // job 1 free again
		program.Claim{S: "w1"},              // job 1
		program.Claim{S: "w2"},              // none: both running
		program.Replaced{W: "w1", By: "w2"}, // pause w1; w2 claims job 1 gen 2; w1's completion refused
		program.Complete{S: "w2"},           // job 1 gen 2 accepted
		program.Overslept{W: "w0"},          // pause w0; its completion of job 2 refused
		program.Crash{W: "w0"},
		program.ShortLease{W: "w1"},        // job 2 gen 2, completed at once
		program.Expire{Job: 1},             // a done job: counted, changes nothing
		program.Enqueue{N: 1},              // job 3
		program.Drain{S: "w0"},             // drains job 3
		program.Lock{S: "locker1", Job: 3}, //
		program.Terminate{S: "locker1"},
		program.Complete{S: "w1", Back: 1}, // job 1 gen 1: an older token, refused
		program.Enqueue{N: 2},              // jobs 4 and 5
		// Claims job 4 with a 200 ms lease 50 ms after BEGIN, and presents it after the lease
		// ran out: refused, though now() (the transaction's start) is long before the lease's end.
		program.ClaimTxn{S: "w2", Wait: 50 * ms, Lease: 200 * ms, Hold: 300 * ms, Complete: true, Commit: true},
		program.ClaimTxn{S: "w0", Complete: true}, // job 4 gen 2, completed, rolled back: as before
	)
	// A completion paused to just before its lease's end is accepted where it lands there;
	// under load it may land past the end and be refused (the model allows either, by where it
	// ran). The count wanted is the accepted one, so the claim, the pause and the completion
	// run again, each refused try adding a timed claim, a real pause and a refusal, until one
	// is accepted. One that landed before the lease's end must be.
	const tries = 5
	late := int64(0)
	for {
		accepted := env.Counts.Completions
		run(
			program.Claim{S: "w1", Lease: 300 * ms}, // job 4 (gen 2, then one more per try)
			program.Near{W: "w1", Margin: 100 * ms}, // still live
			program.Complete{S: "w1"},               // accepted where it landed in time
		)
		ls := env.W.Approach.Landings
		if len(ls) == 0 {
			t.Fatalf("the completion after the pause to just before its lease's end kept no landing\n%s", env.Program())
		}
		l := ls[len(ls)-1]
		if env.Counts.Completions > accepted {
			break
		}
		if l.At.To < l.Edge {
			t.Fatalf("the completion landed at %s, before its lease's end (%s), and was refused\n%s", l.At, l, env.Program())
		}
		if late++; late == tries {
			t.Fatalf("the completion paused to 100 ms before its lease's end landed past it in %d of %d tries; the last at %s (%s)\n%s",
				late, tries, l.At, l, env.Program())
		}
		t.Logf("try %d: the completion landed at %s, past its lease's end (%s): refused; again", late, l.At, l)
	}
	run(
		program.Sleep{D: 20 * ms},                           //
		program.Claim{S: "w0", Lease: 200 * ms},             // job 5
		program.Near{W: "w0", Margin: 50 * ms, After: true}, // over
		program.Complete{S: "w0"},                           // refused
	)
	want := program.Counts{Enqueued: 5, Claims: 8 + late, EmptyClaims: 1, Completions: 4, RejectedCompletions: 5 + late,
		StaleTokenCompletion: 1, Expiries: 1, Pauses: 2, Locks: 2, Releases: 2, Interrupts: 1, Terminates: 1,
		Crashes: 1, Drains: 1, DrainedJobs: 1, ShortLeases: 1, TimedClaims: 4 + late, RealPauses: 4 + late, TxnClaims: 2}
	// The pauses: 350 ms in the transaction, about 200 ms, 20 ms, about 250 ms.
	// Each refused try paused at most its 300 ms lease more.
	if p := env.Counts.PausedMillis; p < 700 || p > 1500+300*late {
		t.Errorf("paused %d ms in all, want about 820 and %d tries of at most 300 ms", p, late)
	}
	want.PausedMillis = env.Counts.PausedMillis
	t.Logf("%s", env.Program())
	if !reflect.DeepEqual(env.Counts, want) {
		t.Errorf("counted\n%+v\nwant\n%+v\n%s", env.Counts, want, env.Program())
	}
}
