package sequential_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/hunt"
	"github.com/pgqcheck/pgqcheck/internal/program"
	_ "github.com/pgqcheck/pgqcheck/internal/program/external" // the external effects' lines
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// destEnv is a sequential world on the seed's queue whose workers call a destination of the
// given mode, closed when the test ends, failed or not.
func destEnv(t *testing.T, mode effectdest.Mode) (*sequential.Env, *effectdest.Dest) {
	t.Helper()
	d, err := effectdest.Start(mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	e, err := sequential.NewEnv(context.Background(), suttest.Install(t, sut.MustBuiltin("seed")), program.Workers, program.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	e.UseDest(d)
	return e, d
}

// The seed's hard case with an external effect: w0 calls, pauses past its lease; w1 reclaims
// the job, calls (its reply lost, so it calls again) and completes; then w0, stale, calls
// again. Every call after the first applies at a destination that does not fence: three
// duplicates of job 1, found by two calls, each a finding with its program. A fencing destination, by key or by
// generation, holds one effect of the done job.
const staleCaller = `enqueue 1
w0 claim
w0 call effect of newest
w0 pause past lease
w1 claim
w1 call effect of newest, reply dropped
w1 complete newest
w0 call effect of newest
count external effects
`

func TestExternalEffectsStaleCaller(t *testing.T) {
	p, err := program.Parse(staleCaller)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode       effectdest.Mode
		duplicates int64
		findings   int
		inForce    int
	}{
		{effectdest.Every, 3, 2, 4},
		{effectdest.Idempotent, 0, 0, 1},
		{effectdest.Fenced, 0, 0, 1},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			e, d := destEnv(t, tc.mode)
			if err := sequential.Replay(context.Background(), e, p.Ops); err != nil {
				t.Fatalf("%v\n%s", err, e.Program())
			}
			if len(e.Trace) != len(p.Ops) {
				t.Fatalf("ran %d of %d operations:\n%s", len(e.Trace), len(p.Ops), e.Program())
			}
			jobs := d.Counts().Jobs
			if len(jobs) != 1 || jobs[0].InForce != tc.inForce || jobs[0].Calls != 4 {
				t.Errorf("the destination holds %+v, want %d effects of job 1 in force after 4 calls\n%s", jobs, tc.inForce, e.Program())
			}
			if e.Counts.Duplicates != tc.duplicates || len(e.NotPromised) != tc.findings || e.Counts.Retries != 1 {
				t.Errorf("counted %d duplicates in %d findings (%d retries), want %d in %d and one retry\n%s", e.Counts.Duplicates, len(e.NotPromised), e.Counts.Retries, tc.duplicates, tc.findings, e.Program())
			}
			for _, f := range e.NotPromised {
				if f.Property() != model.PExternal || f.Program == nil || len(f.Program.Ops) == 0 {
					t.Errorf("a duplicate's finding is %v with program %v", f.Verdict(), f.Program)
				}
			}
			if len(e.NotPromised) > 0 {
				t.Logf("the first duplicate:\n%s", e.NotPromised[0])
			}
		})
	}
}

// The Prop state machine with external effects drawn (calls between claim and completion,
// faults on the calls, pauses past the lease): against a destination that does not fence it
// finds duplicates, counted, each with its program, which reduce to a short case; against
// either fencing destination every check holds, having made calls the other one duplicated.
func TestPropExternalEffects(t *testing.T) {
	for _, mode := range effectdest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			search, err := hunt.NewSequential(ctx, suttest.Install(t, sut.MustBuiltin("seed")))
			if err != nil {
				t.Fatal(err)
			}
			defer search.Close()
			if err := search.UseDest(mode); err != nil {
				t.Fatal(err)
			}
			search.ReduceFor(10 * time.Second)
			seen, reduced := 0, (*verdict.Finding)(nil)
			search.NotPromised = func(p model.Property, n int, reduce func() *verdict.Finding) {
				seen += n
				if reduced == nil {
					reduced = reduce()
				}
			}
			var c hunt.Sum
			f, _, err := search.Search(ctx, hunt.FlagSettings(), &c)
			if err != nil {
				t.Fatal(err)
			}
			if f != nil {
				t.Fatalf("a destination in %s mode failed the property:\n%s", mode, f)
			}
			t.Logf("%s: %d calls, %d retried after a lost reply, %d duplicates, %d findings not promised; %s", mode, c.Calls, c.Retries, c.Duplicates, seen, c.Counts)
			if c.Calls == 0 || c.Retries == 0 {
				t.Fatalf("no call of the destination, or none retried, in a whole search")
			}
			if !mode.Fences() {
				if c.Duplicates == 0 || reduced == nil {
					t.Fatal("a destination that applies every call saw no duplicate in a whole search")
				}
				t.Logf("the first duplicate, reduced:\n%s", reduced)
				// The reducer removes whole operations: a call of an older token keeps the claims
				// that made it older.
				if reduced.Property() != model.PExternal || len(reduced.Program.Ops) > 8 {
					t.Errorf("the duplicate reduced to %d operations (%v); a reclaim's second call needs at most 8", len(reduced.Program.Ops), reduced.Property())
				}
			} else if c.Duplicates != 0 || seen != 0 {
				t.Errorf("a fencing destination counted %d duplicates", c.Duplicates)
			}
		})
	}
}

// staleCompletion replays prog, a stale completion, on the at-least-once queue (which does
// not fence) and returns the env and the not-promised finding it showed.
func staleCompletion(t *testing.T, prog string) (*sequential.Env, *program.Program, verdict.Finding) {
	t.Helper()
	ctx := context.Background()
	q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/queues/at-least-once"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := sequential.NewEnv(ctx, suttest.Install(t, q), program.Workers, program.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	stale, err := program.Parse(prog)
	if err != nil {
		t.Fatal(err)
	}
	e.NotPromised = nil
	if err := sequential.Replay(ctx, e, stale.Ops); err != nil {
		t.Fatal(err)
	}
	if len(e.NotPromised) == 0 || e.NotPromised[0].Property() != model.PFencing {
		t.Fatalf("a stale completion on a queue that does not fence showed no not-promised finding: %v\n%s", e.NotPromised, prog)
	}
	return e, stale, *e.NotPromised[0]
}

// A not-promised finding that a timing accident made need not show again when replayed; the
// reduction then takes the next one seen that does, rather than keep the first as it was.
func TestReduceNotPromisedTakesOneThatReplays(t *testing.T) {
	ctx := context.Background()
	e, stale, seen := staleCompletion(t, "enqueue 1\nenqueue 1\nw0 claim\nw0 snapshot\nw0 pause past lease\nw1 claim\nw1 snapshot\nw0 complete newest\n")
	// The one seen first: its program, replayed, claims and completes in time.
	accident := seen
	accident.Program = &program.Program{Ops: stale.Ops[:3]}
	r := sequential.ReduceNotPromised(ctx, e, []*verdict.Finding{&accident, &seen}, 20*time.Second)
	if r.Property() != model.PFencing || len(r.Program.Ops) >= len(stale.Ops) {
		t.Fatalf("the reduction kept %d operations of property %v; the stale completion replays in fewer than %d:\n%s", len(r.Program.Ops), r.Property(), len(stale.Ops), r)
	}
	e.NotPromised = nil
	if err := sequential.Replay(ctx, e, r.Program.Ops); err != nil || len(e.NotPromised) == 0 {
		t.Fatalf("the reduced program does not show the stale completion again (%v):\n%s", err, r.Program.Body())
	}
	t.Logf("reduced to %d operations:\n%s", len(r.Program.Ops), r.Program.Body())
}

// Of the stale completions seen, the shortest program is the one reduced: a budget spent
// replaying a long program's pauses (a loaded machine) leaves it longer than the short one.
// A negative budget stops the reduction after the first replay, so the program returned is
// the candidate taken, as it was seen.
func TestReduceNotPromisedTakesTheShortestFirst(t *testing.T) {
	ctx := context.Background()
	e, _, long := staleCompletion(t, "enqueue 1\nenqueue 1\nw0 claim\nw0 snapshot\nw0 pause past lease\nw1 claim\nw1 snapshot\nw0 complete newest\n")
	_, _, short := staleCompletion(t, "enqueue 1\nw0 claim\nw0 pause past lease\nw0 complete newest\n")
	r := sequential.ReduceNotPromised(ctx, e, []*verdict.Finding{&long, &short}, -1)
	if r.Property() != model.PFencing || len(r.Program.Ops) != len(short.Program.Ops) {
		t.Fatalf("of stale completions of %d and %d operations, the one taken has %d:\n%s", len(long.Program.Ops), len(short.Program.Ops), len(r.Program.Ops), r)
	}
}
