package model

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The owner's snooze puts the job back to wait its delay without spending an attempt; a stale
// owner's snooze changes nothing; a count the snooze got wrong is the snooze's.
func TestSnooze(t *testing.T) {
	q := New(LowestID)
	q.Shape.Can, q.Shape.Life = Can{Fail: true, Snooze: true}, Lifecycle{MaxAttempts: 3, Backoff: time.Second, Factor: 2}
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(ms(0), hour, true, 1, 1))
	mustNil(t, q.Fail(ms(10), 1, 1, true, "first", 1))
	mustNil(t, q.Claim(ms(1100), hour, true, 1, 2))
	wantViolation(t, q.Clone().Snooze(ms(1200), 1, 2, time.Second, 0), PSnooze, "by the current owner changed 0 rows")
	wantViolation(t, q.Clone().Snooze(ms(1200), 1, 1, time.Second, 1), PSnooze, "only the owner of a live lease")
	mustNil(t, q.Snooze(ms(1200), 1, 2, time.Second, 1))
	mustNil(t, q.CheckSnapshot(ms(1201), []Row{{ID: 1, State: Ready, Generation: 2, Attempts: 1, Kept: "first"}}))
	wantViolation(t, q.Clone().CheckSnapshot(ms(1201), []Row{{ID: 1, State: Ready, Generation: 2, Attempts: 2, Kept: "first"}}), PSnooze, "2 attempts")
	wantViolation(t, q.Clone().Claim(ms(1500), hour, true, 1, 3), PScheduling, "not due before +2.200s")
	mustNil(t, q.Clone().Claim(ms(1500), hour, false, 0, 0))
	mustNil(t, q.Claim(ms(2300), hour, true, 1, 3))
	wantViolation(t, q.Clone().Snooze(ms(2400), 1, 2, time.Second, 1), PSnooze, "only the owner")
	mustNil(t, q.Cancel(ms(2500), 1, 1))
	wantViolation(t, q.Clone().Snooze(ms(2600), 1, 3, time.Second, 1), PCancel, "cancelled is terminal")
}

// Where claims count attempts, the owner's snooze gives its attempt back; on a queue that does
// not fence its workers' writes, a replaced owner's snooze takes effect as that owner's attempt
// decides, which resets the newer attempt's count (River's JobSnooze), and is not promised.
func TestSnoozeCountedAtClaim(t *testing.T) {
	q := New(LowestID)
	q.Shape = Shape{RescueOnly: true, Unfenced: true, Can: Can{Fail: true, Snooze: true, Rescue: true},
		Life: Lifecycle{MaxAttempts: 3, Backoff: time.Second, AttemptsAtClaim: true, LapsesCount: true}}
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(ms(0), hour, true, 1, 1))
	mustNil(t, q.Clone().Snooze(ms(10), 1, 1, time.Second, 1))
	c := q.Clone()
	mustNil(t, c.Snooze(ms(10), 1, 1, time.Second, 1))
	if j, _ := c.Job(1); j.Attempts != 0 || j.State != Ready {
		t.Fatalf("after the owner's snooze the job is %+v, want ready with its attempt given back", j)
	}
	q.Expire(ms(20), 1)
	mustNil(t, q.Rescue(ms(30), []int64{1}))
	mustNil(t, q.Claim(ms(40), hour, true, 1, 2))
	var v *Violation
	if err := q.Snooze(ms(50), 1, 1, time.Second, 1); err == nil || !asViolation(err, &v) || !v.NotPromised || v.Property != PSnooze {
		t.Fatalf("a replaced owner's snooze on an unfenced queue: %v, want a snooze not promised", err)
	}
	if j, _ := q.Job(1); j.Attempts != 0 {
		t.Fatalf("after the replaced owner's snooze the job counts %d attempts, want 0, as its attempt decided", j.Attempts)
	}
}

func asViolation(err error, v **Violation) bool {
	w, ok := err.(*Violation)
	*v = w
	return ok
}

// The concurrent model takes the same step: a stale owner's snooze accepted after the new
// owner's claim returned has no legal order.
func TestLinearSnooze(t *testing.T) {
	sh := Shape{Can: Can{Snooze: true}}
	snooze := func(c int, call, ret, id, gen, rows int64, delay time.Duration) porcupine.Operation {
		return op(c, call, ret, Input{Kind: OpSnooze, Job: id, Gen: gen, Delay: delay}, Output{Rows: rows})
	}
	stale := []porcupine.Operation{enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), expired(0, 5, 6, 1), claimed(2, 7, 8, 1, 2), snooze(1, 9, 10, 1, 1, 1, time.Second)}
	if porcupine.CheckOperations(sh.Porcupine(), stale) {
		t.Error("a stale owner's accepted snooze is linearizable")
	}
	// These histories' windows are all the origin: a job snoozed for no delay is due at once,
	// one snoozed for a second is not due yet.
	owner := []porcupine.Operation{enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), snooze(1, 5, 6, 1, 1, 1, 0), claimed(2, 7, 8, 1, 2)}
	if !porcupine.CheckOperations(sh.Porcupine(), owner) {
		t.Error("a claim after the owner's snooze for no delay is not linearizable")
	}
	early := []porcupine.Operation{enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), snooze(1, 5, 6, 1, 1, 1, time.Second), claimed(2, 7, 8, 1, 2)}
	if porcupine.CheckOperations(sh.Porcupine(), early) {
		t.Error("a claim before the snoozed job is due is linearizable")
	}
}
