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
	if got := q.Claimable(0); len(got) != 1 || got[0] != 2 {
		t.Fatalf("claimable with job 1 locked = %v, want [2]", got)
	}
	mustNil(t, q.Claim(0, 30*time.Second, true, 2, 1))
	q.Unlock(1)
	mustNil(t, q.Claim(0, 30*time.Second, true, 1, 1))
	q.Expire(0, 1)
	mustNil(t, q.Claim(0, 30*time.Second, true, 1, 2))
	if q.CompleteWouldSucceed(0, 1, 1) || !q.CompleteWouldSucceed(0, 1, 2) {
		t.Fatal("completion of generation 1 must fail and of generation 2 succeed")
	}
	mustNil(t, q.Complete(0, 1, 1, 0))
	mustNil(t, q.Complete(0, 1, 2, 1))
	if j, _ := q.Job(1); j.State != Done || q.Completions(1) != 1 {
		t.Fatalf("job 1 = %+v with %d completions, want done once", j, q.Completions(1))
	}
}

func TestClaimViolations(t *testing.T) {
	setup := func() *Queue {
		q := New(LowestID)
		mustNil(t, q.Enqueue(1))
		mustNil(t, q.Enqueue(2))
		mustNil(t, q.Claim(0, hour, true, 1, 1))
		return q
	}
	wantViolation(t, setup().Claim(0, hour, true, 1, 2), PExclusion, "live lease")
	wantViolation(t, setup().Claim(0, hour, true, 2, 2), PGenerations, "must be 1")
	wantViolation(t, setup().Claim(0, hour, false, 0, 0), PRecovery, "job 2 is eligible")
	wantViolation(t, setup().Claim(0, hour, true, 9, 1), PRecovery, "never enqueued")

	q := setup()
	mustNil(t, q.Enqueue(3))
	wantViolation(t, q.Claim(0, hour, true, 3, 1), PClaimOrder, "job 2 is the lowest")
	q.Order = Any
	mustNil(t, q.Claim(0, hour, true, 3, 1))

	q = setup()
	q.Lock(2)
	mustNil(t, q.Claim(0, hour, false, 0, 0)) // the only eligible job is locked: none is right
	wantViolation(t, q.Claim(0, hour, true, 2, 1), PSkipLocked, "row-locked")

	q = setup()
	mustNil(t, q.Complete(0, 1, 1, 1))
	q.Expire(0, 1)
	wantViolation(t, q.Claim(0, hour, true, 1, 2), PDoneOnce, "done is terminal")
}

func TestCompleteViolations(t *testing.T) {
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(0, hour, true, 1, 1))
	q.Expire(0, 1)
	wantViolation(t, q.Complete(0, 1, 1, 1), PFencing, "lease had expired")
	mustNil(t, q.Claim(0, hour, true, 1, 2))
	wantViolation(t, q.Complete(0, 1, 1, 1), PFencing, "stale generation")
	wantViolation(t, q.Complete(0, 1, 2, 0), PFencing, "changed 0 rows")
	wantViolation(t, q.Complete(0, 1, 2, 2), PFencing, "reported 2 rows")
	mustNil(t, q.Complete(0, 1, 2, 1))
	wantViolation(t, q.Complete(0, 1, 2, 1), PDoneOnce, "already done")
}

// Leases are compared with the clock the harness passes: live strictly before lease_until,
// claimable strictly after it.
func TestLeaseTime(t *testing.T) {
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Claim(0, time.Second, true, 1, 1))
	if !q.CompleteWouldSucceed(999*time.Millisecond, 1, 1) {
		t.Fatal("completion inside the lease must succeed")
	}
	if q.CompleteWouldSucceed(1500*time.Millisecond, 1, 1) {
		t.Fatal("completion after the lease must fail")
	}
	if got := q.Claimable(500 * time.Millisecond); len(got) != 0 {
		t.Fatalf("claimable during a live lease: %v", got)
	}
	if got := q.Claimable(1500 * time.Millisecond); len(got) != 1 {
		t.Fatalf("not claimable after the lease: %v", got)
	}
}

func TestCheckSnapshot(t *testing.T) {
	q := New(LowestID)
	mustNil(t, q.Enqueue(1))
	mustNil(t, q.Enqueue(2))
	mustNil(t, q.Claim(0, hour, true, 1, 1))
	good := []Row{{1, Running, 1, true}, {2, Ready, 0, false}}
	mustNil(t, q.CheckSnapshot(0, good))
	// A ready row's lease means nothing.
	mustNil(t, q.CheckSnapshot(0, []Row{{1, Running, 1, true}, {2, Ready, 0, true}}))
	wantViolation(t, q.CheckSnapshot(0, good[:1]), PRecovery, "missing")
	wantViolation(t, q.CheckSnapshot(0, []Row{{1, Running, 2, true}, good[1]}), PGenerations, "generation 2")
	wantViolation(t, q.CheckSnapshot(0, []Row{{1, Running, 1, false}, good[1]}), PDBTime, "expired in the queue")
	wantViolation(t, q.CheckSnapshot(0, []Row{{1, Done, 1, false}, good[1]}), PDoneOnce, "done")
	wantViolation(t, q.CheckSnapshot(0, append(good, Row{3, Ready, 0, false})), PRecovery, "never enqueued")
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
