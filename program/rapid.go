package program

import (
	"context"
	"errors"
	"fmt"

	"pgregory.net/rapid"

	"pgqcheck/model"
)

// StateMachine returns rapid state-machine actions that draw operations against e from the
// configuration (config.go) and run them. realTime draws the real-time property's column:
// leases that end by themselves and real pauses. The "" action is the invariant: the queue's
// snapshot equals the model after every step.
func StateMachine(ctx context.Context, e *Env, realTime bool) map[string]func(*rapid.T) {
	col := SeqPlain
	if realTime {
		col = SeqRealTime
	}
	layout := Layout(col, CanOf(e.W))
	return map[string]func(*rapid.T){
		"op": func(t *rapid.T) {
			k := Pick(Rapid{t}, "op", layout)
			ops := k.Draw(&Draw{C: Rapid{t}, Dialect: DialectSequential, W: e.W, RealTime: realTime})
			if len(ops) == 0 || !ops[0].Applicable(e.W) {
				t.Skip("not applicable: " + k.Name)
			}
			// What follows the first operation runs only where it applies: the first has changed
			// the state, so the action can no longer be skipped.
			for i, op := range ops {
				if i > 0 && !op.Applicable(e.W) {
					continue
				}
				if err := e.Step(ctx, op); err != nil {
					Fail(t, e, err)
				}
			}
		},
		"": func(t *rapid.T) {
			if err := e.Check(ctx); err != nil {
				Fail(t, e, err)
			}
		},
	}
}

// BeginRun starts a property run: an empty queue, then a first enqueue of one to three jobs, so
// that the run's steps go to claims, pauses and completions rather than to operations that do
// not apply to an empty queue.
func BeginRun(ctx context.Context, t *rapid.T, e *Env) {
	t.Helper()
	if err := e.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Step(ctx, Enqueue{N: rapid.IntRange(1, 3).Draw(t, "jobs")}); err != nil {
		Fail(t, e, err)
	}
}

// Fail stops the run with the violated property, the program so far and the snapshot.
func Fail(t *rapid.T, e *Env, err error) {
	t.Helper()
	e.Last = err
	p := model.Property(-1)
	var v *model.Violation
	if errors.As(err, &v) {
		p = v.Property
	}
	FailProperty(t, p, Report(e, err))
}

// Failer is where a failing run is reported: a *rapid.T, or a *testing.T under the fuzzer.
type Failer interface {
	Helper()
	Fatalf(format string, args ...any)
}

// FailProperty fails t with msg from a line of its own for each property (p < 0: not a
// property), so that rapid's shrinker, which keeps only candidates failing with the same stack,
// shrinks toward the same broken promise rather than toward any failure.
func FailProperty(t Failer, p model.Property, msg string) {
	t.Helper()
	switch p {
	case model.PClaimOrder:
		t.Fatalf("%s", msg)
	case model.PFencing:
		t.Fatalf("%s", msg)
	case model.PExclusion:
		t.Fatalf("%s", msg)
	case model.PGenerations:
		t.Fatalf("%s", msg)
	case model.PDoneOnce:
		t.Fatalf("%s", msg)
	case model.PSkipLocked:
		t.Fatalf("%s", msg)
	case model.PRecovery:
		t.Fatalf("%s", msg)
	case model.PLinearizable:
		t.Fatalf("%s", msg)
	case model.PDBTime:
		t.Fatalf("%s", msg)
	case model.PNoErrors:
		t.Fatalf("%s", msg)
	default:
		t.Fatalf("%s", msg)
	}
}

// Report is the failure text: the verdict, the numbered program with the queue's answers, and
// what the model expected the queue to hold.
func Report(e *Env, err error) string {
	return fmt.Sprintf("%v\nqueue: %s\nprogram (queue's answers):\n%smodel now: %v\n",
		err, e.In.Queue.Source, e.Program(), e.Model)
}
