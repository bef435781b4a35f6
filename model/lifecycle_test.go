package model

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// ms is the window of an instant, in milliseconds from the origin.
func ms(t int64) Window { return At(time.Duration(t) * time.Millisecond) }

// retrying is a queue of the lifecycle built-in's form: three attempts, counted when they fail,
// a 1 s backoff doubling each time.
func retrying(t *testing.T) *Queue {
	q := New(LowestID)
	q.Shape.Can, q.Shape.Life = Can{Fail: true}, Lifecycle{MaxAttempts: 3, Backoff: time.Second, Factor: 2}
	mustNil(t, q.Enqueue(1))
	return q
}

// A job fails until its attempts run out: each failure keeps its text and waits its backoff
// (1 s, then 2 s), the third makes it dead, and dead is terminal.
func TestFailUntilDead(t *testing.T) {
	q := retrying(t)
	mustNil(t, q.Claim(ms(0), hour, true, 1, 1))
	mustNil(t, q.Fail(ms(10), 1, 1, true, "first", 1))
	mustNil(t, q.CheckSnapshot(ms(11), []Row{{ID: 1, State: Ready, Generation: 1, Attempts: 1, Kept: "first"}}))
	wantViolation(t, q.CheckSnapshot(ms(11), []Row{{ID: 1, State: Ready, Generation: 1, Attempts: 1}}), PRetries, `its last failure reported "first"`)
	wantViolation(t, q.CheckSnapshot(ms(11), []Row{{ID: 1, State: Ready, Generation: 1, Kept: "first"}}), PRetries, "0 attempts")
	mustNil(t, q.Clone().Claim(ms(500), hour, false, 0, 0)) // waiting out its backoff
	wantViolation(t, q.Clone().Claim(ms(500), hour, true, 1, 2), PScheduling, "its backoff after attempt 1")
	wantViolation(t, q.Clone().Claim(ms(1100), hour, false, 0, 0), PRetries, "the failure lost the job")
	mustNil(t, q.Claim(ms(1100), hour, true, 1, 2))
	mustNil(t, q.Fail(ms(1110), 1, 2, true, "second", 1))
	wantViolation(t, q.Clone().Claim(ms(2500), hour, true, 1, 3), PScheduling, "not due before +3.110s")
	mustNil(t, q.Claim(ms(3200), hour, true, 1, 3))
	mustNil(t, q.Fail(ms(3210), 1, 3, true, "third", 1))
	mustNil(t, q.CheckSnapshot(ms(3211), []Row{{ID: 1, State: Dead, Generation: 3, Attempts: 3, Kept: "third"}}))
	wantViolation(t, q.Clone().CheckSnapshot(ms(3211), []Row{{ID: 1, State: Ready, Generation: 3, Attempts: 3, Kept: "third"}}), PRetries, "dead")
	mustNil(t, q.Clone().Claim(ms(9000), hour, false, 0, 0))
	wantViolation(t, q.Clone().Claim(ms(9000), hour, true, 1, 4), PRetries, "dead is terminal")
	wantViolation(t, q.Clone().Complete(ms(9000), 1, 3, 1), PRetries, "dead is terminal")
	wantViolation(t, q.Clone().Fail(ms(9000), 1, 3, true, "x", 1), PRetries, "dead is terminal")
}

func TestFailFencing(t *testing.T) {
	q := retrying(t)
	mustNil(t, q.Claim(ms(0), hour, true, 1, 1))
	q.Expire(ms(1), 1)
	mustNil(t, q.Clone().Fail(ms(2), 1, 1, true, "late", 0))
	wantViolation(t, q.Clone().Fail(ms(2), 1, 1, true, "late", 1), PWriteFencing, "an expired owner")
	mustNil(t, q.Claim(ms(3), hour, true, 1, 2))
	wantViolation(t, q.Clone().Fail(ms(4), 1, 1, true, "stale", 1), PWriteFencing, "a stale owner")
	wantViolation(t, q.Clone().Fail(ms(4), 1, 2, true, "mine", 0), PWriteFencing, "the failure is lost")
	// Not retryable: dead at the first failure.
	mustNil(t, q.Fail(ms(5), 1, 2, false, "invalid input", 1))
	if j, _ := q.Job(1); j.State != Dead || j.Attempts != 1 || j.Kept != "invalid input" {
		t.Fatalf("after a final failure the job is %+v, want dead after 1 attempt", j)
	}
}

func TestRunAt(t *testing.T) {
	q := New(LowestID)
	q.Shape.Can = Can{Delay: true}
	mustNil(t, q.EnqueueAt(1, ms(10), time.Second))
	mustNil(t, q.Enqueue(2))
	if got := q.Claimable(ms(20)); len(got) != 1 || got[0] != 2 {
		t.Fatalf("claimable before job 1's run-at: %v, want [2]", got)
	}
	wantViolation(t, q.Clone().Claim(ms(20), hour, true, 1, 1), PScheduling, "its run-at time")
	mustNil(t, q.Clone().Claim(ms(20), hour, true, 2, 1)) // job 1 is not due: 2 is the lowest
	// A claim whose window holds the run-at may take the job or pass it over; passing it over
	// says it was not due yet at the window's start.
	c := q.Clone()
	mustNil(t, c.Claim(Window{1005 * time.Millisecond, 1015 * time.Millisecond}, hour, true, 2, 1))
	if j, _ := c.Job(1); j.Due.From != 1010*time.Millisecond {
		t.Fatalf("job 1 is due %s after a claim passed it over, want from +1.010s", j.Due)
	}
	mustNil(t, q.Clone().Claim(Window{1005 * time.Millisecond, 1015 * time.Millisecond}, hour, true, 1, 1))
	wantViolation(t, q.Clone().Claim(ms(1011), hour, true, 2, 1), PClaimOrder, "job 1 is the lowest")
}

func TestRenew(t *testing.T) {
	q := New(LowestID)
	q.Shape.Can = Can{Renew: true}
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(ms(0), time.Second, true, 1, 1))
	mustNil(t, q.Renew(ms(800), 1, 1, time.Second, 1))
	// The renewal keeps the job leased past its first lease's end, and only that long.
	wantViolation(t, q.Clone().Claim(ms(1500), time.Second, true, 1, 2), PExclusion, "renewed at +0.800s")
	mustNil(t, q.Clone().Claim(ms(1900), time.Second, true, 1, 2))
	wantViolation(t, q.Clone().Renew(ms(900), 1, 1, time.Second, 0), PRenewal, "by the current owner changed 0 rows")
	wantViolation(t, q.Clone().Renew(ms(900), 1, 2, time.Second, 1), PWriteFencing, "a stale owner")
	// A lapsed lease stays lapsed.
	mustNil(t, q.Clone().Renew(ms(1900), 1, 1, time.Second, 0))
	wantViolation(t, q.Clone().Renew(ms(1900), 1, 1, time.Second, 1), PRenewal, "revived a lapsed lease")
	// Its end uncertain, either answer narrows it.
	c := q.Clone()
	mustNil(t, c.Renew(Window{1700 * time.Millisecond, 1900 * time.Millisecond}, 1, 1, time.Second, 0))
	if j, _ := c.Job(1); j.Until.To != 1800*time.Millisecond {
		t.Fatalf("a refused renewal left the lease ending %s", j.Until)
	}
}

func TestHeartbeat(t *testing.T) {
	q := New(LowestID)
	q.Shape.Can, q.Shape.Life = Can{Heartbeat: true}, Lifecycle{WorkerLease: true}
	for id := int64(1); id <= 3; id++ {
		mustNil(t, q.Enqueue(id))
	}
	mustNil(t, q.ClaimFor(ms(0), time.Second, true, 1, 1, "w0"))
	mustNil(t, q.ClaimFor(ms(100), time.Second, true, 2, 1, "w0"))
	mustNil(t, q.ClaimFor(ms(100), time.Second, true, 3, 1, "w1"))
	wantViolation(t, q.Clone().Heartbeat(ms(500), "w0", time.Second, []int64{1}), PRenewal, "left job 2 to lapse")
	wantViolation(t, q.Clone().Heartbeat(ms(500), "w0", time.Second, []int64{1, 2, 3}), PWriteFencing, "not a lease of w0's")
	mustNil(t, q.Heartbeat(ms(500), "w0", time.Second, []int64{1, 2}))
	wantViolation(t, q.Clone().Claim(ms(1300), time.Second, true, 1, 2), PExclusion, "renewed")
	// w0 and its jobs lapse together; its heartbeat revives neither.
	mustNil(t, q.Clone().Heartbeat(ms(1600), "w0", time.Second, nil))
	wantViolation(t, q.Clone().Heartbeat(ms(1600), "w0", time.Second, []int64{2}), PRenewal, "revived a lapsed lease")
}

// River's form: attempts counted at the claim, lapsed jobs rescued, dead once rescued with
// every attempt used, else due after their backoff.
// On a queue that does not fence its workers' writes, a replaced owner's failure of a running
// job is not promised: it is reported, and applies as that owner's attempt decides (its
// attempt, not the job's newest, where claims count attempts), as River's executor does.
func TestFailUnfenced(t *testing.T) {
	q := New(LowestID)
	q.Shape = Shape{RescueOnly: true, Unfenced: true, Can: Can{Fail: true}, Life: Lifecycle{MaxAttempts: 2, Backoff: time.Second, Factor: 2, AttemptsAtClaim: true}}
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(ms(0), 100*time.Millisecond, true, 1, 1))
	mustNil(t, q.Rescue(ms(200), []int64{1}))
	mustNil(t, q.Claim(ms(300), time.Second, true, 1, 2))
	err := q.Clone().Fail(ms(400), 1, 1, true, "stale", 1)
	if v, ok := err.(*Violation); !ok || !v.NotPromised || v.Property != PWriteFencing {
		t.Fatalf("a stale failure on an unfenced queue: %v, want property 11 not promised", err)
	}
	c := q.Clone()
	_ = c.Fail(ms(400), 1, 1, true, "stale", 1)
	// Decided as attempt 1 of 2: retried after 1 s, though the job is at its second attempt.
	mustNil(t, c.CheckSnapshot(ms(401), []Row{{ID: 1, State: Ready, Generation: 2, Attempts: 2, Kept: "stale"}}))
	wantViolation(t, q.Clone().Fail(ms(400), 1, 2, true, "mine", 0), PWriteFencing, "the failure is lost")
	// A fenced queue must refuse it.
	q.Shape.Unfenced = false
	if err := q.Fail(ms(400), 1, 1, true, "stale", 1); err == nil || err.(*Violation).NotPromised {
		t.Fatalf("a stale failure on a fenced queue: %v, want a violation", err)
	}
	// The concurrent specification accepts it on an unfenced queue only.
	ops := []porcupine.Operation{
		enq(0, 1, 2, 1), claimed(1, 3, 4, 1, 1), expired(3, 5, 6, 1), claimed(2, 7, 8, 1, 2),
		op(1, 9, 10, Input{Kind: OpFail, Job: 1, Gen: 1, Retryable: true, Text: "e"}, Output{Rows: 1}),
	}
	fails, life := Can{Fail: true}, Lifecycle{MaxAttempts: 2, Backoff: 10}
	if !porcupine.CheckOperations(Shape{Unfenced: true, Can: fails, Life: life}.Porcupine(), ops) {
		t.Error("an unfenced queue's stale failure is not linearizable")
	}
	if porcupine.CheckOperations(Shape{Can: fails, Life: life}.Porcupine(), ops) {
		t.Error("a fenced queue's stale failure is linearizable")
	}
}

func TestAttemptsAtClaimRescued(t *testing.T) {
	q := New(LowestID)
	q.Shape = Shape{RescueOnly: true, Can: Can{Fail: true}, Life: Lifecycle{MaxAttempts: 2, Backoff: time.Second, AttemptsAtClaim: true, RescueBackoff: true}}
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(ms(0), 100*time.Millisecond, true, 1, 1))
	mustNil(t, q.Rescue(ms(200), []int64{1}))
	mustNil(t, q.CheckSnapshot(ms(201), []Row{{ID: 1, State: Ready, Generation: 1, Attempts: 1}}))
	wantViolation(t, q.Clone().Claim(ms(300), time.Second, true, 1, 2), PScheduling, "not due before +1.200s")
	mustNil(t, q.Claim(ms(1300), 100*time.Millisecond, true, 1, 2))
	mustNil(t, q.Clone().Rescue(ms(1500), []int64{1}))
	c := q.Clone()
	mustNil(t, c.Rescue(ms(1500), []int64{1}))
	wantViolation(t, c.CheckSnapshot(ms(1501), []Row{{ID: 1, State: Ready, Generation: 2, Attempts: 2}}), PRetries, "specification says dead")
	// A rescuer that lets the exhausted job be claimed again hands out a third attempt.
	c = q.Clone()
	c.Shape.Life.MaxAttempts = 0
	mustNil(t, c.Rescue(ms(1500), []int64{1}))
	c.Shape.Life.MaxAttempts = 2
	wantViolation(t, c.Claim(ms(9000), time.Second, true, 1, 3), PRetries, "attempt 3; the queue allows 2")
}

func TestEffectsLedger(t *testing.T) {
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Enqueue(2))
	mustNil(t, q.CheckEffects(nil))
	wantViolation(t, q.CheckEffects([]EffectCount{{1, 1}}), PEffects, "left its effect")
	q.Effect(1)
	mustNil(t, q.CheckEffects([]EffectCount{{1, 1}}))
	wantViolation(t, q.CheckEffects(nil), PEffects, "the effect was lost")
	wantViolation(t, q.CheckEffects([]EffectCount{{1, 2}}), PEffects, "applied 2 times")
	wantViolation(t, q.CheckEffects([]EffectCount{{9, 1}}), PEffects, "never enqueued")
}

func TestLifecycleBackoff(t *testing.T) {
	lc := Lifecycle{Backoff: 100 * time.Millisecond, Factor: 3}
	for n, want := range map[int64]time.Duration{1: 100 * time.Millisecond, 2: 300 * time.Millisecond, 3: 900 * time.Millisecond} {
		if got := lc.BackoffAfter(n); got != want {
			t.Errorf("backoff after attempt %d = %v, want %v", n, got, want)
		}
	}
	ws := Lifecycle{WholeSeconds: true}
	for in, want := range map[time.Duration]time.Duration{100 * time.Millisecond: time.Second, time.Second: time.Second, 1500 * time.Millisecond: 2 * time.Second} {
		if got := ws.Lease(in); got != want {
			t.Errorf("a %v lease in whole seconds is %v, want %v", in, got, want)
		}
	}
}

// The concurrent specification of the lifecycle's operations: legal histories pass, each broken
// promise fails.
func TestLinearLifecycleHistories(t *testing.T) {
	life := Shape{Can: Can{Fail: true, Renew: true, Effect: true, Delay: true}, Life: Lifecycle{MaxAttempts: 2, Backoff: 10}}
	at := func(o porcupine.Operation, w Window) porcupine.Operation {
		in := o.Input.(Input)
		in.At = w
		o.Input = in
		return o
	}
	fail := func(c int, call, ret, gen, rows int64, retry bool) porcupine.Operation {
		return at(op(c, call, ret, Input{Kind: OpFail, Job: 1, Gen: gen, Retryable: retry, Text: "e"}, Output{Rows: rows}), Window{time.Duration(call), time.Duration(ret)})
	}
	claimAt := func(c int, call, ret, gen int64) porcupine.Operation {
		return at(claimed(c, call, ret, 1, gen), Window{time.Duration(call), time.Duration(ret)})
	}
	seen := func(call, ret int64, st State, gen, attempts int64) porcupine.Operation {
		return op(3, call, ret, Input{Kind: OpObserve, Job: 1}, Output{Found: true, State: st, Gen: gen, Attempts: attempts, Kept: "e"})
	}
	cases := []struct {
		name string
		ok   bool
		ops  []porcupine.Operation
	}{
		{"a failure retried after its backoff, then dead", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimAt(1, 3, 4, 1), fail(1, 5, 6, 1, 1, true), claimAt(2, 20, 21, 2), fail(2, 22, 23, 2, 1, true),
			seen(24, 25, Dead, 2, 2),
		}},
		{"a claim inside the backoff", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimAt(1, 3, 4, 1), fail(1, 5, 6, 1, 1, true), claimAt(2, 7, 8, 2),
		}},
		{"a dead job claimed", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimAt(1, 3, 4, 1), fail(1, 5, 6, 1, 1, false), claimAt(2, 90, 91, 2),
		}},
		{"a stale owner's failure accepted", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimAt(1, 3, 4, 1), expired(3, 5, 6, 1), claimAt(2, 7, 8, 2), fail(1, 9, 10, 1, 1, true),
		}},
		{"a renewal of a lapsed lease accepted", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimAt(1, 3, 4, 1), expired(3, 5, 6, 1),
			op(1, 7, 8, Input{Kind: OpRenew, Job: 1, Gen: 1}, Output{Rows: 1}),
		}},
		{"an effect with its completion, observed once", true, []porcupine.Operation{
			enq(0, 1, 2, 1), claimAt(1, 3, 4, 1), completed(1, 5, 8, 1, 1, 1), op(1, 6, 8, Input{Kind: OpEffect, Job: 1}, Output{}),
			op(3, 9, 10, Input{Kind: OpEffects, Job: 1}, Output{Rows: 1}),
		}},
		{"an effect no committed completion carried", false, []porcupine.Operation{
			enq(0, 1, 2, 1), claimAt(1, 3, 4, 1), op(3, 9, 10, Input{Kind: OpEffects, Job: 1}, Output{Rows: 1}),
		}},
		{"a job scheduled later claimed early", false, []porcupine.Operation{
			at(op(0, 1, 2, Input{Kind: OpEnqueue, Delay: 100}, Output{Job: 1}), Window{1, 2}), claimAt(1, 3, 4, 1),
		}},
	}
	m := life.Porcupine()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(m, c.ops); got != c.ok {
				t.Fatalf("linearizable = %v, want %v", got, c.ok)
			}
		})
	}
}

// Where dead rows are deleted, a snapshot that lacks a dead job is right, one that holds it
// again shows a discarded job back, and a job that is not dead still may not vanish.
func TestDeadDeleted(t *testing.T) {
	q := New(LowestID)
	q.Shape.DoneDeleted, q.Shape.DeadDeleted = true, true
	q.Shape.Can, q.Shape.Life = Can{Fail: true}, Lifecycle{Backoff: time.Second, Factor: 2}
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Enqueue(2))
	mustNil(t, q.Claim(ms(0), hour, true, 1, 1))
	mustNil(t, q.Fail(ms(10), 1, 1, false, "invalid input", 1))
	mustNil(t, q.CheckSnapshot(ms(11), []Row{{ID: 2, State: Ready}}))
	wantViolation(t, q.CheckSnapshot(ms(11), []Row{{ID: 1, State: Ready, Generation: 1, Attempts: 1, Kept: "invalid input"}, {ID: 2, State: Ready}}), PRetries, "job 1 was dead and deleted, but the queue holds it again")
	wantViolation(t, q.CheckSnapshot(ms(11), nil), PRecovery, "only a done or dead job may vanish")
	// The history checker's step says the same.
	dead := JobState{Exists: true, State: Dead, Gen: 1}
	if _, v := (observeSpec{}).step(q.Shape, dead, Input{Kind: OpObserve, Job: 1}, Output{}); v != nil {
		t.Fatalf("a snapshot without a deleted dead job: %v", v)
	}
	if _, v := (observeSpec{}).step(q.Shape, dead, Input{Kind: OpObserve, Job: 1}, Output{Found: true, State: Ready, Gen: 1}); v == nil || v.Property != PRetries {
		t.Fatalf("a snapshot holding a deleted dead job again: %v, want property 12", v)
	}
}

// TestDueBeforeTheOrigin: a run's times count from its first recorded clock reading, and a
// statement that began before that reading runs at a negative time. A job enqueued without a
// run-at time is due from the start, so such a claim may take it: a crash round's first claim,
// at -0.002s..-0.000s, was once reported as property 14 on the seed queue.
func TestDueBeforeTheOrigin(t *testing.T) {
	before := Window{From: -2 * time.Millisecond, To: -50 * time.Microsecond}
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(before, hour, true, 1, 1))
	var sh Shape
	s, _ := sh.StepJob(JobState{}, Input{Kind: OpEnqueue, At: Window{From: -3 * time.Millisecond, To: -2 * time.Millisecond}}, Output{Job: 1})
	if _, v := sh.StepJob(s, Input{Kind: OpClaim, At: before, Lease: time.Hour}, Output{Found: true, Job: 1, Gen: 1}); v != nil {
		t.Fatalf("the job's history: %s", v)
	}
}
