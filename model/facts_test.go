package model

import "testing"

// Every kind says what its operations mean to the readers of histories; a kind that says
// nothing, or the wrong thing, would leave a count or a check blind to it.
func TestFactsOfEveryKind(t *testing.T) {
	cases := []struct {
		in   Input
		out  Output
		want Facts
	}{
		{Input{Kind: OpEnqueue, Delay: 5}, Output{Job: 3}, Facts{Job: 3, Named: true, Statement: "enqueue", Creates: true, Later: true}},
		{Input{Kind: OpEnqueue}, Output{Outcome: Unknown}, Facts{Statement: "enqueue", Creates: true}},
		{Input{Kind: OpClaim, Lease: 7}, Output{Found: true, Job: 2, Gen: 4}, Facts{Job: 2, Named: true, Statement: "claim", Gen: 4, Lease: 7, Writes: true, Claims: true, Took: true}},
		{Input{Kind: OpClaim, Lease: 7}, Output{}, Facts{Statement: "claim", Lease: 7, Claims: true}},
		{Input{Kind: OpComplete, Job: 2, Gen: 4}, Output{Rows: 1}, Facts{Job: 2, Named: true, Statement: "complete", Gen: 4, Writes: true, Ends: true, Accepted: true}},
		{Input{Kind: OpComplete, Job: 2, Gen: 3}, Output{}, Facts{Job: 2, Named: true, Statement: "complete", Gen: 3, Writes: true, Ends: true}},
		{Input{Kind: OpExpire, Job: 2}, Output{}, Facts{Job: 2, Named: true, Statement: "expire", Writes: true, Expires: true}},
		{Input{Kind: OpObserve, Job: 2}, Output{Found: true}, Facts{Job: 2, Named: true, Statement: "snapshot", Observes: true}},
		{Input{Kind: OpLock, Job: 2}, Output{}, Facts{Job: 2, Named: true, Statement: "lock", Locks: true}},
		{Input{Kind: OpUnlock, Job: 2}, Output{}, Facts{Job: 2, Named: true, Statement: "unlock", Unlocks: true}},
		{Input{Kind: OpRescue}, Output{Found: true, Job: 2}, Facts{Job: 2, Named: true, Statement: "rescue", Writes: true, Rescues: true}},
		{Input{Kind: OpFail, Job: 2, Gen: 1}, Output{Rows: 1}, Facts{Job: 2, Named: true, Statement: "fail", Gen: 1, Writes: true, Fails: true, Final: true, Accepted: true}},
		{Input{Kind: OpRenew, Job: 2, Gen: 1}, Output{Rows: 1}, Facts{Job: 2, Named: true, Statement: "renew", Gen: 1, Writes: true, Renews: true, Accepted: true}},
		{Input{Kind: OpRenew, Worker: "w0"}, Output{Found: true, Job: 2}, Facts{Job: 2, Named: true, Statement: "renew", Writes: true, Renews: true, Accepted: true}},
		{Input{Kind: OpEffect, Job: 2}, Output{}, Facts{Job: 2, Named: true, Statement: "effect", Effect: true}},
		{Input{Kind: OpEffects, Job: 2}, Output{Rows: 1}, Facts{Job: 2, Named: true, Statement: "effects", Tallies: true}},
		{Input{Kind: OpCancel, Job: 2}, Output{Rows: 1}, Facts{Job: 2, Named: true, Statement: "cancel", Writes: true, Accepted: true, Tally: "cancellations"}},
		{Input{Kind: OpSnooze, Job: 2, Gen: 1}, Output{Rows: 1}, Facts{Job: 2, Named: true, Statement: "snooze", Gen: 1, Writes: true, Accepted: true, Tally: "snoozes"}},
		{Input{Kind: OpUnique}, Output{Found: true, Job: 4}, Facts{Job: 4, Named: true, Statement: "enqueue unique", Creates: true, Accepted: true, Tally: "unique enqueues"}},
		{Input{Kind: OpUnique}, Output{}, Facts{Statement: "enqueue unique", Accepted: true, Tally: "unique enqueues"}},
		{Input{Kind: "something new"}, Output{}, Facts{Statement: "something new"}},
	}
	kinds := map[OpKind]bool{}
	for _, c := range cases {
		kinds[c.in.Kind] = true
		if got := FactsOf(c.in, c.out); got != c.want {
			t.Errorf("%s -> %+v\n got %+v\nwant %+v", DescribeOp(c.in, c.out), c.out, got, c.want)
		}
	}
	for k := range specs {
		if !kinds[k] {
			t.Errorf("no case says what a %s means to the readers of histories", k)
		}
	}
}
