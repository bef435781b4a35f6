package model

import (
	"fmt"
	"time"
)

// Snoozing (snooze.sql, River's JobSnooze): the owner of a live lease puts its job back to wait
// a delay without spending an attempt; the job is ready again, due once the delay ends. A stale
// or expired owner's snooze changes nothing, and leaves the counter of a newer attempt as it is.

// PSnooze is the promise of snoozing.
var PSnooze = judgedWhere(property(19, "snooze", true, true),
	func(c Can) bool { return c.Snooze }, "the queue has no snooze.sql", "snoozes")

// OpSnooze is a snooze of the claim (Input.Job, Gen) for Input.Delay; Output.Rows the rows it
// changed.
const OpSnooze OpKind = "snooze"

func init() { specs[OpSnooze] = snoozeSpec{} }

type snoozeSpec struct{ named }

func (snoozeSpec) facts(in Input, out Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: "snooze", Gen: in.Gen, Writes: true, Accepted: out.Rows == 1, Tally: "snoozes"}
}

// opens: a snooze makes its job eligible again once its delay ends.
func (snoozeSpec) opens(_ Input, out Output, _ func(Input) bool) bool {
	return out.Outcome == Unknown || out.Rows == 1
}

// step: like a completion, a snooze must change the job iff its generation owns a live lease.
func (snoozeSpec) step(sh Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	would := s.completable(in.Gen, in.At)
	// A queue that does not fence its workers' writes may accept a replaced owner's snooze of a
	// running job, which then decides as that owner's attempt would.
	unfenced := !sh.Promised(PWriteFencing) && s.Exists && s.State == Running
	if out.Outcome == Unknown {
		if would != Over || unfenced {
			return sh.snoozed(s, in), nil
		}
		return s, nil
	}
	call := fmt.Sprintf("snooze(%d, gen %d, %v)", in.Job, in.Gen, in.Delay)
	switch {
	case out.Rows != 0 && out.Rows != 1:
		return s, Violate(PSnooze, "%s reported %d rows; a snooze changes 0 or 1", call, out.Rows)
	case would == Live && out.Rows == 0:
		return s, Violate(PSnooze, "%s at %s by the current owner changed 0 rows, though its lease was certainly live: %s", call, in.At, s.lease())
	case would != Over && out.Rows == 1:
		return sh.snoozed(s, in), nil
	case out.Rows == 0:
		return s, nil
	case s.State.Terminal():
		return s, left(s.State, "%s changed 1 row", call)
	}
	v := Violate(PSnooze, "%s changed 1 row, but the job is %s: only the owner of a live lease may snooze it", call, s)
	if unfenced {
		v.NotPromised = true
		return sh.snoozed(s, in), v
	}
	return s, v
}

func (snoozeSpec) learn(_ Shape, s JobState, in Input, out Output) JobState {
	return refusedSawOver(s, in, out)
}

// snoozed is the job s after the snooze in took effect: ready again, due once the delay ends,
// its attempt given back where claims count attempts (as the claim presented counts it).
func (sh Shape) snoozed(s JobState, in Input) JobState {
	attempts := s.Attempts
	if sh.Life.AttemptsAtClaim {
		attempts = max(sh.Life.attemptsOf(s.Attempts, s.Gen, in.Gen)-1, 0)
	}
	s = s.leaseless()
	s.State, s.Due, s.Attempts, s.CountedBy = Ready, Window{}, attempts, PSnooze
	if in.Delay > 0 {
		s.Due = in.At.Shift(in.Delay)
	}
	return s
}

func (snoozeSpec) describe(in Input, out Output) (string, string) {
	return fmt.Sprintf("snooze(%d, gen %d, %v)", in.Job, in.Gen, in.Delay), rowsAnswer(out)
}

// Snooze checks the rows a snooze of the claim (id, gen) for delay, in window at, reported, and
// applies it.
func (q *Queue) Snooze(at Window, id, gen int64, delay time.Duration, rows int64) error {
	return errOf(q.step(id, Input{Kind: OpSnooze, Job: id, Gen: gen, At: at, Delay: delay}, Output{Rows: rows}))
}
