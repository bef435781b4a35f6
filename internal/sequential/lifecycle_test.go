package sequential_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/program"
	_ "github.com/pgqcheck/pgqcheck/internal/program/lifecycle" // the lifecycle's lines
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// runTrace runs a program on the built-in lifecycle queue beside the model and returns its
// trace, failing the test on any verdict.
func runTrace(t *testing.T, text string) string {
	t.Helper()
	ctx := context.Background()
	e, err := sequential.NewEnv(ctx, suttest.Install(t, sut.MustBuiltin("lifecycle")), program.Workers, program.Lockers)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p, err := program.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := sequential.Replay(ctx, e, p.Ops); err != nil {
		t.Fatalf("%v\n%s", err, e.Program())
	}
	if len(e.Trace) != len(p.Ops) {
		t.Fatalf("ran %d of %d operations:\n%s", len(e.Trace), len(p.Ops), e.Program())
	}
	return e.Program()
}

// timedTries is how often a program whose answers depend on where its statements land in real
// time runs before its missing answers fail the test: a loaded machine can make a pause end late,
// so that a statement meant to land inside a lease lands after it. The model judges every try,
// so a wrong verdict fails at once; only answers the timing did not reach are tried again.
const timedTries = 5

// wantTrace runs text until its trace holds every line (each try's verdict must hold), and
// fails with the last trace, whose clock readings show where each statement landed.
func wantTrace(t *testing.T, text string, lines ...string) {
	t.Helper()
	var missing []string
	var trace string
	for try := 1; try <= timedTries; try++ {
		trace, missing = runTrace(t, text), nil
		for _, l := range lines {
			if !strings.Contains(trace, l) {
				missing = append(missing, l)
			}
		}
		if len(missing) == 0 {
			if try > 1 {
				t.Logf("the program's timing reached every answer on try %d of %d", try, timedTries)
			}
			return
		}
	}
	t.Errorf("in %d tries the trace lacks %q; the last:\n%s", timedTries, missing, trace)
}

// A job fails until its attempts run out, each retry waiting its backoff, and ends dead with
// its last error kept; a claim inside a backoff finds nothing; the drain leaves it dead.
func TestFailUntilDead(t *testing.T) {
	wantTrace(t, `enqueue 1
w0 claim
w0 fail newest
w1 claim
pause 150ms
w1 claim
w1 fail newest
pause 250ms
w2 claim
w2 fail newest
snapshot
w0 drain
`, "w0 fail newest               -> job 1 gen 1: 1 row", "w1 claim                     -> none",
		"w2 fail newest               -> job 1 gen 3: 1 row", `snapshot                     -> [1:dead/g3/a3/"job 1 gen 3 failed"]`,
		"w0 drain                     -> 0 completed")
}

// A renewal keeps the lease of a slow worker past its first end; another worker's claim skips
// the job, and the slow worker's completion is accepted with its business effect.
func TestRenewalKeepsTheLease(t *testing.T) {
	wantTrace(t, `enqueue 1
w0 claim lease 250ms
w0 pause until 40ms before its lease ends
w0 renew newest
pause 80ms
w1 claim
w0 complete newest with its effect
`, "w0 renew newest              -> job 1 gen 1: 1 row", "w1 claim                     -> none",
		"w0 complete newest with its effect -> written; job 1 gen 1: 1 row")
}

// A stale worker's completion is refused and rolls its business effect back; the current
// owner's commits its own.
func TestStaleEffectRolledBack(t *testing.T) {
	wantTrace(t, `enqueue 1
w0 claim
w0 pause past lease
w1 claim
w0 complete newest with its effect
w1 complete newest with its effect
`, "w0 complete newest with its effect -> written; job 1 gen 1: 0 rows", "w1 complete newest with its effect -> written; job 1 gen 2: 1 row")
}

// A job enqueued to run later is not claimed before its time, and is once it passed.
func TestRunAt(t *testing.T) {
	wantTrace(t, `enqueue due in 250ms
w0 claim
pause 300ms
w0 claim
`, "w0 claim                     -> none", "w0 claim                     -> job 1 gen 1")
}
