package program_test

import (
	"context"
	"os"
	"testing"

	"pgqcheck/program"
	"pgqcheck/sut"
	"pgqcheck/sut/pgserver"
	"pgqcheck/sut/suttest"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// TestCounts runs a program through every kind of step on the seed queue, the model checking
// each answer, and compares what Env counted with what the program did.
func TestCounts(t *testing.T) {
	ctx := context.Background()
	env, err := program.NewEnv(ctx, suttest.Install(t, sut.MustBuiltin("seed")), program.Workers, program.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	steps := []program.Op{
		program.Enqueue{N: 2},               // jobs 1 and 2
		program.Lock{S: "locker0", Job: 1},  // job 1 locked
		program.Claim{S: "w0"},              // job 2
		program.Cancel{S: "locker0"},        // job 1 free again
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
	}
	for _, op := range steps {
		if err := env.Step(ctx, op); err != nil {
			t.Fatalf("%s: %v\n%s", op, err, env.Program())
		}
	}
	want := program.Counts{Enqueued: 3, Claims: 4, EmptyClaims: 1, Completions: 2, RejectedCompletions: 3,
		StaleTokenCompletion: 1, Expiries: 1, Pauses: 2, Locks: 2, Releases: 2, Cancels: 1, Terminates: 1,
		Crashes: 1, Drains: 1, DrainedJobs: 1, ShortLeases: 1}
	if env.Counts != want {
		t.Errorf("counted\n%+v\nwant\n%+v\n%s", env.Counts, want, env.Program())
	}
}
