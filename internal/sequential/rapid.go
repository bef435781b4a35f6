package sequential

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgqcheck/pgqcheck/internal/verdict"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// StateMachine returns rapid state-machine actions that draw operations against e from the
// configuration (config.go) and run them. realTime draws the real-time property's column:
// leases that end by themselves and real pauses. The "" action is the invariant: the queue's
// snapshot equals the model after every step.
func StateMachine(ctx context.Context, e *Env, realTime bool) map[string]func(*rapid.T) {
	col := generate.SeqPlain
	if realTime {
		col = generate.SeqRealTime
	}
	layout := generate.Layout(col, e.W.Can)
	return map[string]func(*rapid.T){
		"op": func(t *rapid.T) {
			k := generate.Pick(generate.Rapid{T: t}, "op", layout)
			ops := k.Draw(&generate.Draw{C: generate.Rapid{T: t}, Dialect: generate.DialectSequential, W: e.W, RealTime: realTime})
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
	if err := e.Step(ctx, program.Enqueue{N: rapid.IntRange(1, 3).Draw(t, "jobs")}); err != nil {
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
	verdict.FailProperty(t, p, Report(e, err))
}

// Report is the failure text: the verdict, the numbered program with the queue's answers, and
// what the model expected the queue to hold.
func Report(e *Env, err error) string {
	return fmt.Sprintf("%v\nqueue: %s\nprogram (queue's answers):\n%smodel now: %v\n",
		err, e.In.Queue.Source, e.Program(), e.Model)
}
