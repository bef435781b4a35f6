package sequential

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
)

// Replay runs a program from an empty queue, skipping operations that do not apply, and returns
// the first violation or error. The same program always gives the same result, which is what
// makes a saved program a regression case.
func Replay(ctx context.Context, e *Env, ops []program.Op) error {
	if err := e.Reset(ctx); err != nil {
		return &program.HarnessError{Err: err}
	}
	for _, op := range ops {
		if !op.Applicable(e.W) {
			continue
		}
		if err := e.Step(ctx, op); err != nil {
			return err
		}
	}
	return nil
}

// ReduceSequential reduces a sequential program on env, and leaves env holding the reduced
// run, so its trace is what gets reported.
func ReduceSequential(ctx context.Context, e *Env, ops []program.Op, budget time.Duration) ([]program.Op, error) {
	ops, _ = verdict.Reduce(ctx, ops, budget, func(ops []program.Op) error { return Replay(ctx, e, ops) })
	return ops, Replay(ctx, e, ops)
}

// replayNotPromised replays ops and answers the first thing of property p the queue did that
// it does not promise, as its violation (nil when it did nothing of the kind, or broke a
// promise it makes).
func replayNotPromised(ctx context.Context, e *Env, ops []program.Op, p model.Property) error {
	e.NotPromised = nil
	err := Replay(ctx, e, ops)
	e.NotPromised = slices.DeleteFunc(e.NotPromised, func(f *verdict.Finding) bool { return f.Property() != p })
	if len(e.NotPromised) > 0 {
		return e.NotPromised[0].Violation
	}
	if program.IsHarness(err) {
		return err
	}
	return nil
}

// ReduceNotPromised reduces the program of a not-promised finding as a failure's program is
// reduced (whole operations, for as long as the rest still shows it), and returns it with the
// reduced program's trace. It takes the findings observed of the first one's property, shortest
// program first (the order seen among equals), and reduces the first whose program shows it
// again when replayed: a finding that a timing accident made (a pause that landed late on a
// loaded machine) need not replay, and then nothing of it can be removed; and each replay of a
// long program costs its pauses again, which on a loaded machine can spend the budget on one
// long program when a short one of the same finding was seen too. When none replays within
// budget, the first is returned as it was observed. It leaves env's NotPromised empty.
func ReduceNotPromised(ctx context.Context, e *Env, fs []*verdict.Finding, budget time.Duration) *verdict.Finding {
	defer func() { e.NotPromised = nil }()
	p := fs[0].Property()
	deadline := time.Now().Add(budget)
	ofIt := slices.DeleteFunc(slices.Clone(fs), func(f *verdict.Finding) bool { return f.Property() != p })
	slices.SortStableFunc(ofIt, func(a, b *verdict.Finding) int { return len(a.Program.Ops) - len(b.Program.Ops) })
	for _, f := range ofIt {
		left := budget
		if budget > 0 {
			if left = time.Until(deadline); left <= 0 {
				break
			}
		}
		if ctx.Err() != nil {
			break
		}
		replay := func(ops []program.Op) error { return replayNotPromised(ctx, e, ops, p) }
		ops, err := verdict.Reduce(ctx, f.Program.Ops, left, replay)
		var v *model.Violation
		if !errors.As(err, &v) {
			continue // it did not show again
		}
		// env then holds the reduced run, whose trace is reported
		if err := replay(ops); errors.As(err, &v) && len(e.NotPromised) > 0 {
			out := *f
			out.Violation, out.Program = v, &program.Program{Header: map[string]string{}, Ops: ops}
			out.Trace, out.Model = e.NotPromised[0].Trace, e.NotPromised[0].Model
			return &out
		}
	}
	return fs[0]
}
