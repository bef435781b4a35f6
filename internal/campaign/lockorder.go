package campaign

import (
	"context"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/lockorder"
	"github.com/pgqcheck/pgqcheck/model"
)

// lockOrderMode is the lock-order check of a queue's business effects (package lockorder): each
// round runs its interleaving of three completions with effects twice: under the bounded retry
// policy, where a retried transaction must leave exactly one effect, then without retries,
// where a deadlock is the finding. A queue without effect.sql has nothing to check.
type lockOrderMode struct{}

func (lockOrderMode) Name() string { return "lock-order" }

func (lockOrderMode) Properties() []model.Property {
	return []model.Property{model.PNoErrors, model.PEffects}
}

func (lockOrderMode) Start(_ context.Context, w *Worker) (Hunter, error) {
	return &lockOrderHunter{w: w}, nil
}

type lockOrderHunter struct{ w *Worker }

func (h *lockOrderHunter) Close() {}

func (h *lockOrderHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	if !h.w.In.Queue.Can().Effect {
		// Nothing to interleave: the round costs what a round of another mode does.
		return nil, waitOr(ctx, time.Second)
	}
	for _, p := range []lockorder.RetryPolicy{lockorder.Bounded, lockorder.NoRetry} {
		out, err := lockorder.Run(ctx, h.w.In, p)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, err
		}
		h.w.Tally.AddChecks(1)
		h.w.Tally.AddOps(int64(len(out.Trace)))
		if f := out.Finding; f != nil {
			fl := newFailure(f, string(lockorder.Mode), h.w.Index, n, 0)
			fl.foundAt = time.Now()
			return []*Failure{fl}, nil
		}
	}
	return nil, nil
}

func waitOr(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
