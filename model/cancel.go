package model

import "fmt"

// Cancelling a job from outside (cancel.sql): a job not yet at an end of its life becomes
// cancelled, an end of its own. Its owner's later completion, failure, renewal or snooze then
// changes nothing, no claim or rescue takes it, and a cancel of a job already at an end changes
// nothing.

// PCancel is the promise of cancellation.
var PCancel = judgedWhere(property(18, "cancellation", true, true),
	func(c Can) bool { return c.Cancel }, "the queue has no cancel.sql", "cancellations")

// Cancelled is the state of a job cancelled from outside.
var Cancelled = end("cancelled", PCancel)

// OpCancel is a cancel of a job (Input.Job) from outside; Output.Rows the rows it changed.
const OpCancel OpKind = "cancel"

func init() { specs[OpCancel] = cancelSpec{} }

type cancelSpec struct{ named }

func (cancelSpec) facts(in Input, out Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: "cancel", Writes: true, Accepted: out.Rows == 1, Tally: "cancellations"}
}

// step: a job that exists and is at no end must be cancelled, whatever holds it; any other must
// be left as it is.
func (cancelSpec) step(_ Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	live := s.Exists && !s.State.Terminal()
	cancelled := s.leaseless()
	cancelled.State, cancelled.Due = Cancelled, Window{}
	switch {
	case out.Outcome == Unknown && live:
		return cancelled, nil
	case out.Outcome == Unknown:
		return s, nil
	case out.Rows != 0 && out.Rows != 1:
		return s, Violate(PCancel, "cancel(%d) reported %d rows; a cancel changes 0 or 1", in.Job, out.Rows)
	case live && out.Rows == 0:
		return s, Violate(PCancel, "cancel(%d) changed 0 rows, but the job is %s: a job not at an end must be cancelled", in.Job, s)
	case live:
		return cancelled, nil
	case out.Rows == 0:
		return s, nil
	case !s.Exists:
		return s, Violate(PCancel, "cancel(%d) changed 1 row, but the job was never enqueued", in.Job)
	}
	return s, left(s.State, "cancel(%d) changed 1 row", in.Job)
}

func (cancelSpec) describe(in Input, out Output) (string, string) {
	return fmt.Sprintf("cancel(%d)", in.Job), rowsAnswer(out)
}

// Cancel checks the rows a cancel of job id in window at reported, and applies it.
func (q *Queue) Cancel(at Window, id, rows int64) error {
	return errOf(q.step(id, Input{Kind: OpCancel, Job: id, At: at}, Output{Rows: rows}))
}
