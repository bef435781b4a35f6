package program

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"pgqcheck/model"
)

// replayNotPromised replays ops and answers the first thing the queue did that it does not
// promise, as its violation (nil when it did nothing of the kind, or broke a promise it makes).
func replayNotPromised(ctx context.Context, e *Env, ops []Op) error {
	e.NotPromised = nil
	err := Replay(ctx, e, ops)
	if len(e.NotPromised) > 0 {
		return e.NotPromised[0].Violation
	}
	if IsHarness(err) {
		return err
	}
	return nil
}

// ReduceNotPromised reduces the program of a not-promised finding as a failure's program is
// reduced (whole operations, for as long as the rest still shows it), and returns it with the
// reduced program's trace. It leaves env's NotPromised empty.
func ReduceNotPromised(ctx context.Context, e *Env, f *Finding, budget time.Duration) *Finding {
	ops, _ := Reduce(ctx, f.Program.Ops, budget, func(ops []Op) error { return replayNotPromised(ctx, e, ops) })
	err := replayNotPromised(ctx, e, ops) // env then holds the reduced run, whose trace is reported
	var v *model.Violation
	out := *f
	if errors.As(err, &v) && v.NotPromised && len(e.NotPromised) > 0 {
		out.Violation, out.Program = v, &Program{Header: map[string]string{}, Ops: ops}
		out.Trace, out.Model = e.NotPromised[0].Trace, e.NotPromised[0].Model
	}
	e.NotPromised = nil
	return &out
}

// The properties each kind of run judges.
var (
	SequentialProperties = []model.Property{model.PClaimOrder, model.PFencing, model.PExclusion, model.PGenerations,
		model.PDoneOnce, model.PSkipLocked, model.PRecovery, model.PDBTime, model.PNoErrors}
	ConcurrentProperties = []model.Property{model.PFencing, model.PExclusion, model.PGenerations, model.PDoneOnce,
		model.PSkipLocked, model.PRecovery, model.PLinearizable, model.PDBTime, model.PNoErrors}
)

// NotPromisedWhat names what a not-promised property's findings are, for "N ... observed".
func NotPromisedWhat(p model.Property, n int) string {
	what := "breach"
	if p == model.PFencing {
		what = "stale completion"
	}
	if n != 1 {
		what += "s"
	}
	return what
}

// Verdicts is a verdict's closing table: each property a run judged, and whether it held, was
// violated, was not promised (with how often the run saw the queue break it) or is not judged
// on this queue's shape.
type Verdicts struct {
	Shape       model.Shape
	Judged      []model.Property
	Violated    map[model.Property]bool
	NotPromised map[model.Property]int
}

// NewVerdicts starts a table for the properties a suite judges.
func NewVerdicts(sh model.Shape, judged ...model.Property) *Verdicts {
	return &Verdicts{Shape: sh, Judged: judged, Violated: map[model.Property]bool{}, NotPromised: map[model.Property]int{}}
}

// Status is one property's line: held, violated, not promised (N observed), not judged.
func (v *Verdicts) Status(p model.Property) string {
	switch {
	case !v.Shape.Judged(p):
		return "not judged (the queue declares no generation counter)"
	case v.Violated[p]:
		return "violated"
	case !v.Shape.Promised(p):
		return fmt.Sprintf("not promised: %d observed", v.NotPromised[p])
	}
	return "held"
}

func (v *Verdicts) String() string {
	var b strings.Builder
	b.WriteString("property                    verdict\n")
	for _, p := range v.Judged {
		fmt.Fprintf(&b, "%-3d %-23s %s\n", int(p), p.Name(), v.Status(p))
	}
	return b.String()
}
