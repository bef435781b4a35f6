package model

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func cancellable(t *testing.T) *Queue {
	q := New(LowestID)
	q.Shape.Can = Can{Cancel: true, Fail: true}
	for id := int64(1); id <= 3; id++ {
		mustNil(t, q.Enqueue(id))
	}
	return q
}

// A cancel ends a job that is ready or running; nothing takes a cancelled job again, and a cancel
// of a job at an end changes nothing.
func TestCancel(t *testing.T) {
	q := cancellable(t)
	mustNil(t, q.Claim(ms(0), hour, true, 1, 1))
	wantViolation(t, q.Clone().Cancel(ms(1), 1, 0), PCancel, "must be cancelled")
	mustNil(t, q.Cancel(ms(1), 1, 1)) // running: its owner still works it
	mustNil(t, q.Cancel(ms(2), 2, 1)) // ready
	wantViolation(t, q.Clone().Complete(ms(3), 1, 1, 1), PCancel, "cancelled is terminal")
	mustNil(t, q.Clone().Complete(ms(3), 1, 1, 0))
	wantViolation(t, q.Clone().Fail(ms(3), 1, 1, true, "x", 1), PCancel, "cancelled is terminal")
	wantViolation(t, q.Clone().Claim(ms(3), hour, true, 2, 1), PCancel, "cancelled is terminal")
	mustNil(t, q.Clone().Claim(ms(3), hour, true, 3, 1)) // the cancelled ones are no longer eligible
	wantViolation(t, q.Clone().Claim(ms(3), hour, false, 0, 0), PRecovery, "job 3 is eligible")
	mustNil(t, q.Clone().Cancel(ms(3), 1, 0))
	wantViolation(t, q.Clone().Cancel(ms(3), 1, 1), PCancel, "cancelled is terminal")
	wantViolation(t, q.Clone().Cancel(ms(3), 9, 1), PCancel, "never enqueued")
	mustNil(t, q.CheckSnapshot(ms(4), []Row{{ID: 1, State: Cancelled, Generation: 1}, {ID: 2, State: Cancelled}, {ID: 3, State: Ready}}))
	wantViolation(t, q.CheckSnapshot(ms(4), []Row{{ID: 1, State: Running, Generation: 1, LeaseLive: true}, {ID: 2, State: Cancelled}, {ID: 3, State: Ready}}), PCancel, "specification says cancelled")
	mustNil(t, q.Claim(ms(5), hour, true, 3, 1))
	mustNil(t, q.Complete(ms(6), 3, 1, 1))
	wantViolation(t, q.Clone().Cancel(ms(7), 3, 1), PDoneOnce, "done is terminal")
}

// The concurrent model takes the same step: a completion accepted after a cancel of its job
// returned has no legal order, one called before the cancel returned may have come first.
func TestLinearCancel(t *testing.T) {
	sh := Shape{Can: Can{Cancel: true}}
	cancel := func(c int, call, ret, id, rows int64) porcupine.Operation {
		return op(c, call, ret, Input{Kind: OpCancel, Job: id}, Output{Rows: rows})
	}
	late := []porcupine.Operation{enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), cancel(0, 5, 6, 1, 1), completed(1, 7, 8, 1, 1, 1)}
	if porcupine.CheckOperations(sh.Porcupine(), late) {
		t.Error("a completion accepted after its job's cancel returned is linearizable")
	}
	racing := []porcupine.Operation{enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), cancel(0, 5, 8, 1, 0), completed(1, 6, 7, 1, 1, 1)}
	if !porcupine.CheckOperations(sh.Porcupine(), racing) {
		t.Error("a completion that raced a cancel, which then found the job done, is not linearizable")
	}
}
