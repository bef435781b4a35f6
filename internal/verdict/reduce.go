package verdict

import (
	"context"
	"errors"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

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
	return a != nil && b != nil && program.IsHarness(a) == program.IsHarness(b)
}

// NoReduction is the budget of a reduction that only confirms the failure: the kill table's,
// where a mutant only needs catching and shrinking proves nothing.
const NoReduction time.Duration = -1

// Reduce is the one reducer, for sequential and scheduled programs alike: it removes chunks of
// operations (halves first, down to single ones) for as long as the rest still fails with the
// same property, replaying each candidate with run. It stops early, keeping the smallest
// program reached, once budget has passed (0: no limit; NoReduction: replay once, remove
// nothing) or ctx is done. Harness errors are not reduced. It returns the reduced program and
// its failure.
func Reduce(ctx context.Context, ops []program.Op, budget time.Duration, run func([]program.Op) error) ([]program.Op, error) {
	want := run(ops)
	var v *model.Violation
	if !errors.As(want, &v) {
		return ops, want
	}
	deadline := time.Now().Add(budget)
	over := func() bool {
		return ctx.Err() != nil || budget < 0 || (budget > 0 && time.Now().After(deadline))
	}
	for changed := true; changed && !over(); {
		changed = false
		for chunk := max(1, len(ops)/2); chunk >= 1 && !over(); chunk /= 2 {
			for i := 0; i+chunk <= len(ops) && !over(); {
				cand := append(append([]program.Op(nil), ops[:i]...), ops[i+chunk:]...)
				if err := run(cand); SameFailure(err, want) {
					ops, want, changed = cand, err, true
					continue // the same i now names the next chunk
				}
				i += chunk
			}
		}
	}
	return ops, want
}
