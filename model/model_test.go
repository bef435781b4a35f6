package model

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const hour = time.Hour

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantViolation(t *testing.T, err error, property Property, detail string) {
	t.Helper()
	var v *Violation
	if !errors.As(err, &v) {
		t.Fatalf("want a violation of property %d, got %v", property, err)
	}
	if v.Property != property || !strings.Contains(v.Detail, detail) {
		t.Fatalf("want property %d mentioning %q, got %v", property, detail, v)
	}
}

// The seed's walkthrough, step by step: 2|1 while job 1 is locked, 1|1 after the locker rolls
// back, 1|2 after expiry, then completions of generation 1 and 2 change 0 and 1 rows.
func TestSeedWalkthrough(t *testing.T) {
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Enqueue(2))
	q.Lock(1)
	if got := q.Claimable(At(0)); len(got) != 1 || got[0] != 2 {
		t.Fatalf("claimable with job 1 locked = %v, want [2]", got)
	}
	mustNil(t, q.Claim(At(0), 30*time.Second, true, 2, 1))
	q.Unlock(1)
	mustNil(t, q.Claim(At(0), 30*time.Second, true, 1, 1))
	q.Expire(At(0), 1)
	mustNil(t, q.Claim(At(0), 30*time.Second, true, 1, 2))
	if q.CompleteWouldSucceed(At(0), 1, 1) != Over || q.CompleteWouldSucceed(At(0), 1, 2) != Live {
		t.Fatal("completion of generation 1 must fail and of generation 2 succeed")
	}
	mustNil(t, q.Complete(At(0), 1, 1, 0))
	mustNil(t, q.Complete(At(0), 1, 2, 1))
	if j, _ := q.Job(1); j.State != Done || q.Completions(1) != 1 {
		t.Fatalf("job 1 = %+v with %d completions, want done once", j, q.Completions(1))
	}
}

func TestClaimViolations(t *testing.T) {
	setup := func() *Queue {
		q := New(LowestID)
		mustNil(t, q.Enqueue(1))
		mustNil(t, q.Enqueue(2))
		mustNil(t, q.Claim(At(0), hour, true, 1, 1))
		return q
	}
	wantViolation(t, setup().Claim(At(0), hour, true, 1, 2), PExclusion, "certainly live")
	wantViolation(t, setup().Claim(At(0), hour, true, 2, 2), PGenerations, "must be 1")
	wantViolation(t, setup().Claim(At(0), hour, false, 0, 0), PRecovery, "job 2 is eligible")
	wantViolation(t, setup().Claim(At(0), hour, true, 9, 1), PRecovery, "never enqueued")

	q := setup()
	mustNil(t, q.Enqueue(3))
	wantViolation(t, q.Claim(At(0), hour, true, 3, 1), PClaimOrder, "job 2 is the lowest")
	q.Order = Any
	mustNil(t, q.Claim(At(0), hour, true, 3, 1))

	q = setup()
	q.Lock(2)
	mustNil(t, q.Claim(At(0), hour, false, 0, 0)) // the only eligible job is locked: none is right
	wantViolation(t, q.Claim(At(0), hour, true, 2, 1), PSkipLocked, "row-locked")

	q = setup()
	mustNil(t, q.Complete(At(0), 1, 1, 1))
	q.Expire(At(0), 1)
	wantViolation(t, q.Claim(At(0), hour, true, 1, 2), PDoneOnce, "done is terminal")
}

func TestCompleteViolations(t *testing.T) {
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(At(0), hour, true, 1, 1))
	q.Expire(At(0), 1)
	wantViolation(t, q.Complete(At(0), 1, 1, 1), PFencing, "certainly over")
	mustNil(t, q.Claim(At(0), hour, true, 1, 2))
	wantViolation(t, q.Complete(At(0), 1, 1, 1), PFencing, "stale generation")
	wantViolation(t, q.Complete(At(0), 1, 2, 0), PFencing, "changed 0 rows")
	wantViolation(t, q.Complete(At(0), 1, 2, 2), PFencing, "reported 2 rows")
	mustNil(t, q.Complete(At(0), 1, 2, 1))
	wantViolation(t, q.Complete(At(0), 1, 2, 1), PDoneOnce, "done is terminal")
}

// Leases are compared with the database time the statements ran in: a lease claimed in
// [0, 10ms] for 1 s ends in [1s, 1.01s]; a statement in that span may see it either way.
func TestLeaseTime(t *testing.T) {
	ms := time.Millisecond
	w := func(from, to time.Duration) Window { return Window{from * ms, to * ms} }
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(w(0, 10), time.Second, true, 1, 1))
	for _, c := range []struct {
		at   Window
		want Liveness
	}{{w(990, 999), Live}, {w(995, 1005), Uncertain}, {w(1011, 1020), Over}, {w(1000, 1010), Uncertain}} {
		if got := q.CompleteWouldSucceed(c.at, 1, 1); got != c.want {
			t.Errorf("completion in %s: %s, want %s", c.at, got, c.want)
		}
	}
	if got := q.Claimable(w(500, 510)); len(got) != 0 {
		t.Fatalf("claimable during a live lease: %v", got)
	}
	if got := q.Claimable(w(1500, 1510)); len(got) != 1 {
		t.Fatalf("not claimable after the lease: %v", got)
	}
	// In the uncertain span both answers are legal, and each narrows the lease's end.
	c := q.Clone()
	mustNil(t, c.Claim(w(1003, 1004), time.Second, false, 0, 0)) // skipped: it ends after 1.003s
	if j, _ := c.Job(1); j.Until != w(1003, 1010) {
		t.Fatalf("after a claim skipped it, the lease ends in %s, want %s", j.Until, w(1003, 1010))
	}
	// Seen live at 1.003s, the lease is certainly live a little earlier.
	wantViolation(t, c.Complete(w(1001, 1002), 1, 1, 0), PFencing, "certainly live")
	c = q.Clone()
	mustNil(t, c.Complete(w(1005, 1006), 1, 1, 0)) // refused: it ends by 1.006s
	wantViolation(t, c.CheckSnapshot(w(1007, 1008), []Row{{ID: 1, State: Running, Generation: 1, LeaseLive: true}}), PDBTime, "certainly over")
	wantViolation(t, q.Clone().Claim(w(700, 701), time.Second, true, 1, 2), PExclusion, "certainly live")
	mustNil(t, q.Clone().Claim(w(1002, 1003), time.Second, true, 1, 2))
}

func TestCheckSnapshot(t *testing.T) {
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Enqueue(2))
	mustNil(t, q.Claim(At(0), hour, true, 1, 1))
	good := []Row{{ID: 1, State: Running, Generation: 1, LeaseLive: true}, {ID: 2, State: Ready, Generation: 0, LeaseLive: false}}
	mustNil(t, q.CheckSnapshot(At(0), good))
	// A ready row's lease means nothing.
	mustNil(t, q.CheckSnapshot(At(0), []Row{{ID: 1, State: Running, Generation: 1, LeaseLive: true}, {ID: 2, State: Ready, Generation: 0, LeaseLive: true}}))
	wantViolation(t, q.CheckSnapshot(At(0), good[:1]), PRecovery, "missing")
	wantViolation(t, q.CheckSnapshot(At(0), []Row{{ID: 1, State: Running, Generation: 2, LeaseLive: true}, good[1]}), PGenerations, "generation 2")
	wantViolation(t, q.CheckSnapshot(At(0), []Row{{ID: 1, State: Running, Generation: 1, LeaseLive: false}, good[1]}), PDBTime, "expired in a snapshot")
	wantViolation(t, q.CheckSnapshot(At(0), []Row{{ID: 1, State: Done, Generation: 1, LeaseLive: false}, good[1]}), PDoneOnce, "done")
	wantViolation(t, q.CheckSnapshot(At(0), append(good, Row{ID: 3, State: Ready, Generation: 0, LeaseLive: false})), PRecovery, "never enqueued")
}

func TestEnqueueIDs(t *testing.T) {
	q := New("")
	if q.Order != LowestID {
		t.Fatalf("default order %q, want lowest-id", q.Order)
	}
	mustNil(t, q.Enqueue(5))
	wantViolation(t, q.Enqueue(5), PRecovery, "already exists")
	wantViolation(t, q.Enqueue(3), PClaimOrder, "ascend")
	c := q.Clone()
	mustNil(t, c.Enqueue(6))
	if q.Len() != 1 || c.Len() != 2 {
		t.Fatal("clone shares state with its original")
	}
}
