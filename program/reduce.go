package program

import (
	"context"
	"errors"

	"pgqcheck/model"
)

// Replay runs a program from an empty queue, skipping operations that do not apply, and returns
// the first violation or error. The same program always gives the same result, which is what
// makes a saved program a regression case.
func Replay(ctx context.Context, e *Env, ops []Op) error {
	if err := e.Reset(ctx); err != nil {
		return &HarnessError{err}
	}
	for _, op := range ops {
		if !op.Applicable(e) {
			continue
		}
		if err := e.Step(ctx, op); err != nil {
			return err
		}
	}
	return nil
}

// SameFailure reports whether two errors are the same verdict: the same property broken, or
// both failures of the same non-property kind.
func SameFailure(a, b error) bool {
	var va, vb *model.Violation
	if errors.As(a, &va) != errors.As(b, &vb) {
		return false
	}
	if va != nil {
		return va.Property == vb.Property
	}
	var ha, hb *HarnessError
	return a != nil && b != nil && errors.As(a, &ha) == errors.As(b, &hb)
}

// Reduce shrinks a failing program further than rapid can in its time budget: it removes
// chunks of operations (halves first, down to single ones) for as long as the rest still fails
// with the same verdict, replaying each candidate directly. Harness errors are not reduced.
// It returns the reduced program and its failure; env is left holding the reduced run.
func Reduce(ctx context.Context, e *Env, ops []Op) ([]Op, error) {
	want := Replay(ctx, e, ops)
	var v *model.Violation
	if !errors.As(want, &v) {
		return ops, want
	}

	for changed := true; changed; {
		changed = false
		for chunk := max(1, len(ops)/2); chunk >= 1; chunk /= 2 {
			for i := 0; i+chunk <= len(ops); {
				cand := append(append([]Op(nil), ops[:i]...), ops[i+chunk:]...)
				if err := Replay(ctx, e, cand); SameFailure(err, want) {
					ops, want, changed = cand, err, true
					continue // the same i now names the next chunk
				}
				i += chunk
			}
		}
	}
	// Leave env holding the reduced run, so its trace is what gets reported.
	return ops, Replay(ctx, e, ops)
}

// Executed returns the operations of env's last run that actually ran.
func (e *Env) Executed() []Op { return append([]Op(nil), e.Ops...) }
