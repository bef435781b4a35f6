package sequential

import (
	"context"
	"errors"
	"slices"
	"time"

	"pgqcheck/model"
	"pgqcheck/program"
	"pgqcheck/verdict"
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
// reduced program's trace. It leaves env's NotPromised empty.
func ReduceNotPromised(ctx context.Context, e *Env, f *verdict.Finding, budget time.Duration) *verdict.Finding {
	p := f.Property()
	ops, _ := verdict.Reduce(ctx, f.Program.Ops, budget, func(ops []program.Op) error { return replayNotPromised(ctx, e, ops, p) })
	err := replayNotPromised(ctx, e, ops, p) // env then holds the reduced run, whose trace is reported
	var v *model.Violation
	out := *f
	if errors.As(err, &v) && v.NotPromised && len(e.NotPromised) > 0 {
		out.Violation, out.Program = v, &program.Program{Header: map[string]string{}, Ops: ops}
		out.Trace, out.Model = e.NotPromised[0].Trace, e.NotPromised[0].Model
	}
	e.NotPromised = nil
	return &out
}
