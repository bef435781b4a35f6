package generate

import (
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
)

// Draws that land a statement at a lease's edge as closely as the claim's measured window
// allows (program.Near's Tight pause), on both sides of it, for every statement that reads a
// lease: another claim, the holder's completion or renewal, the rescue step, a snapshot. And
// transactions that stay open across a lease's edge before a claim, a completion or the
// rescue step, where a predicate on now() (the transaction's start) parts from the clock.

// edgeClaim is the claim whose lease the edge is: one of the edge leases, or the queue's own
// where it fixes its lease (a world is known: sequential and fuzzed programs).
func edgeClaim(d *Draw, s string) program.Claim {
	c := program.Claim{S: s, Lease: d.Span("lease", EdgeLeases)}
	if d.W != nil && d.W.FixedLease != 0 {
		c.Lease = 0
	}
	return c
}

// tightEdgeThen (sequential): a worker claims, pauses to just before or just after its lease
// ends, and there another worker claims, the holder completes or renews, or the rescuer runs
// (or nothing: the snapshot after every step reads the lease too).
func tightEdgeThen(d *Draw) []program.Op {
	w := d.Worker()
	c := edgeClaim(d, w)
	n := program.Near{W: w, Tight: true, After: d.Bool("after")}
	by := d.Other(w)
	thens := []program.Op{program.Claim{S: by}, program.Complete{S: w}, program.Rescue{S: by}, lifecycle.Renew{S: w}, nil}
	ops := []program.Op{c, n}
	if then := thens[d.Choose(0, len(thens)-1, "then")]; then != nil {
		ops = append(ops, then)
	}
	return ops
}

// edgeOther is the session a transaction across another's lease edge runs on: another worker
// in a sequential program, the session itself in a scheduled one (its claim and its
// transaction follow each other there).
func edgeOther(d *Draw, w string) string {
	if d.Dialect == DialectScheduled {
		return w
	}
	return d.Other(w)
}

// tightClaimTxn: a worker claims; a transaction that began before that lease ended waits across
// its end, then claims: the lapsed job is eligible to a claim that reads the clock, and looks
// live to one that reads the transaction's start.
func tightClaimTxn(d *Draw) []program.Op {
	w := d.Worker()
	c := edgeClaim(d, w)
	by := edgeOther(d, w)
	return []program.Op{c, program.ClaimTxn{S: by, WaitEdge: w, Complete: d.Bool("complete in txn"), Commit: true}}
}

// tightCompleteTxn: a claim transaction holds its claim's lease past its end, then completes:
// the completion must be refused, whatever the transaction's start says.
func tightCompleteTxn(d *Draw) []program.Op {
	w := d.Worker()
	c := edgeClaim(d, w)
	return []program.Op{program.ClaimTxn{S: w, Lease: c.Lease, HoldEdge: true, Complete: true, Commit: d.Bool("commit")}}
}

// tightRescueTxn: a worker claims with the queue's lease; the rescue step runs in a transaction
// that began before that lease ended and waited across its end: it must make the job ready.
func tightRescueTxn(d *Draw) []program.Op {
	w := d.Worker()
	by := edgeOther(d, w)
	return []program.Op{program.Claim{S: w}, program.RescueTxn{S: by, Edge: w}}
}

// tightRescueEdge: a worker claims with the queue's lease and pauses to just before its end,
// where the rescue step runs: it must leave a lease that is still live alone.
func tightRescueEdge(d *Draw) []program.Op {
	w := d.Worker()
	return []program.Op{program.Claim{S: w}, program.Near{W: w, Tight: true}, program.Rescue{S: d.Other(w)}}
}
