package generate

import (
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/external"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
)

// How each kind of config.go is drawn. Every draw of a kind makes the same choices in the same
// order in every mode; the dialect decides only what "a worker" and "a job" are.

func one(op program.Op) []program.Op { return []program.Op{op} }

func claim(d *Draw) []program.Op { return one(program.Claim{S: d.Worker()}) }

func timedClaim(d *Draw) []program.Op {
	return one(program.Claim{S: d.Worker(), Lease: d.Span("lease", TimedLeases)})
}

// complete presents one of the holder's tokens, mostly its newest; older ones are the stale
// tokens of paused workers.
func complete(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	return one(program.Complete{S: w, Back: d.Choose(0, 2, "back")})
}

// onHolder draws an operation of a worker that holds a token.
func onHolder(op func(w string) program.Op) func(d *Draw) []program.Op {
	return func(d *Draw) []program.Op {
		w, ok := d.Holder()
		if !ok {
			return nil
		}
		return one(op(w))
	}
}

func expire(d *Draw) []program.Op {
	id, ok := d.Job()
	if !ok {
		return nil
	}
	return one(program.Expire{Job: id})
}

// expireClaimed ends, mostly, the lease of a recent claim (a lease worth ending, whatever ids
// the queue hands out); else a job's by position.
func expireClaimed(d *Draw) []program.Op {
	s := d.Worker()
	if d.Choose(0, 3, "expire by id") == 3 {
		id, _ := d.Job()
		return one(program.Expire{S: s, Job: id})
	}
	return one(program.ExpireClaim{S: s, Back: d.Choose(0, 2, "back")})
}

func enqueueOne(d *Draw) []program.Op {
	d.Enqueued(1)
	return one(program.Enqueue{S: d.Worker(), N: 1})
}

// claimTxn claims in a transaction of its own, maybe completes the claimed job in it, and
// commits (mostly) or rolls back; timed, it waits before its claim and before its completion,
// with a lease of its own length.
func claimTxn(d *Draw, timed bool) []program.Op {
	s := d.Worker()
	o := program.ClaimTxn{S: s, Commit: d.Choose(0, 3, "rollback") < 3, Complete: d.Bool("complete in txn")}
	if timed {
		o.Wait, o.Lease, o.Hold = d.Span("wait", TxnWaits), d.Span("lease", TimedLeases), d.Span("hold", TxnHolds)
	}
	return one(o)
}

// fuzzClaimTxn is FuzzQueue's claim transaction: waits, a lease of its own, and one of three
// ends (complete and commit, commit only, complete and roll back).
func fuzzClaimTxn(d *Draw) []program.Op {
	w := d.Worker()
	wait, hold, lease := d.Span("wait", TxnWaits), d.Span("hold", TxnHolds), d.Span("lease", TimedLeases)
	end := d.Choose(0, 2, "end")
	return one(program.ClaimTxn{S: w, Wait: wait, Hold: hold, Lease: lease, Complete: end != 1, Commit: end != 2})
}

func lockTxn(d *Draw) []program.Op {
	s := d.Locker()
	id, _ := d.Job()
	return one(program.LockTxn{S: s, Job: id, Commit: d.Choose(0, 3, "rollback") < 3})
}

func lock(d *Draw) []program.Op {
	l := d.Locker()
	id, ok := d.Job()
	if !ok {
		return nil
	}
	return one(program.Lock{S: l, Job: id})
}

// release ends a locker's transaction: the locker is drawn first, as the release's receiver,
// then how it ends.
func release(d *Draw) []program.Op {
	l := d.Locker()
	ends := []program.Op{program.Commit{S: l}, program.Rollback{S: l}, program.Interrupt{S: l}, program.Terminate{S: l}}
	return one(ends[d.Choose(0, len(ends)-1, "how")])
}

func replaced(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	return one(program.Replaced{W: w, By: d.Other(w)})
}

// near pauses a holder until just before or just after its own newest lease ends.
func near(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	return one(program.Near{W: w, Margin: d.Span("margin", NearMargins), After: d.Bool("after")})
}

// leaseEdge: what the session does next, or another session's claim or snapshot, lands at the
// edge of the lease it just took.
func leaseEdge(d *Draw) []program.Op {
	c := program.Claim{S: d.Worker(), Lease: d.Span("lease", EdgeLeases)}
	return append([]program.Op{c}, near(d)...)
}

// edgeComplete: the holder's next statement is its completion, at the edge the pause reached:
// a lease that ends early, or a completion that accepts a late one, shows here.
func edgeComplete(d *Draw) []program.Op {
	ops := leaseEdge(d)
	return append(ops, program.Complete{S: ops[0].(program.Claim).S})
}

// edgeThen pauses a holder to its lease's edge, then lands another worker's claim, the
// holder's completion, or the rescuer there (or nothing: the snapshot after every step looks
// too). What follows the pause runs only where it applies: the pause has changed the state by
// then.
func edgeThen(d *Draw) []program.Op {
	ops := near(d)
	if ops == nil {
		return nil
	}
	w := ops[0].(program.Near).W
	by := d.Other(w)
	thens := []program.Op{nil, program.Claim{S: by}, program.Complete{S: w}}
	if d.W.Can.Rescue { // the rescuer must leave a live lease alone
		thens = append(thens, program.Rescue{S: by})
	}
	if then := thens[d.Choose(0, len(thens)-1, "then")]; then != nil {
		ops = append(ops, then)
	}
	return ops
}

// proxyFault arms a proxy fault for the statement it hits (see ProxyHits).
func proxyFault(d *Draw) []program.Op {
	s := d.Worker()
	kind := faultproxy.Kinds[d.Choose(0, len(faultproxy.Kinds)-1, "proxy fault")]
	f := program.ProxyFault{S: s, Kind: kind}
	if !kind.Lost() {
		f.For = d.Span("hold", ScheduledHolds)
	}
	var hit program.Op
	switch ProxyHits[d.Choose(0, len(ProxyHits)-1, "hit")] {
	case "claim":
		hit = program.Claim{S: s}
	case "complete":
		hit = program.Complete{S: s, Back: d.Choose(0, 2, "back")}
	case "expire":
		hit = program.ExpireClaim{S: s, Back: d.Choose(0, 2, "back")}
	case "enqueue":
		hit = program.Enqueue{S: s, N: 1}
	case "snapshot":
		hit = program.Snapshot{S: s}
	case "txn":
		txn := []program.Op{program.Begin{S: s}, program.Claim{S: s}}
		if d.Bool("complete in txn") {
			txn = append(txn, program.Complete{S: s})
		}
		if d.Choose(0, 3, "rollback") < 3 {
			txn = append(txn, program.Commit{S: s})
		} else {
			txn = append(txn, program.Rollback{S: s})
		}
		at := d.Choose(0, len(txn)-1, "fault at")
		return append(append(append([]program.Op(nil), txn[:at]...), f), txn[at:]...)
	}
	return []program.Op{f, hit}
}

// The lifecycle's draws.

// fail reports a failure of a held token, mostly the newest, now and then a final one.
func fail(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	return one(lifecycle.Fail{S: w, Back: d.Choose(0, 1, "back"), Final: d.Choose(0, 3, "final") == 3})
}

func renew(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	return one(lifecycle.Renew{S: w, Back: d.Choose(0, 1, "back")})
}

func heartbeat(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	return one(lifecycle.Heartbeat{S: w})
}

func enqueueLater(d *Draw) []program.Op {
	d.Enqueued(1)
	return one(lifecycle.Later{S: d.Worker(), Delay: d.Span("delay", LaterDelays)})
}

// effectComplete completes a held token, mostly the newest, with its business effect.
func effectComplete(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	return one(lifecycle.WithEffect{S: w, Back: d.Choose(0, 2, "back")})
}

// renewEdge: a worker claims with a short lease, renews it just before its end, and pauses past
// that first end; then another worker's claim must skip the job, and the holder's completion
// must be accepted.
func renewEdge(d *Draw) []program.Op {
	return keptAlive(d, func(w string) program.Op { return lifecycle.Renew{S: w} })
}

// heartbeatEdge is renewEdge with the worker's heartbeat.
func heartbeatEdge(d *Draw) []program.Op {
	return keptAlive(d, func(w string) program.Op { return lifecycle.Heartbeat{S: w} })
}

func keptAlive(d *Draw, renewal func(w string) program.Op) []program.Op {
	w := d.Worker()
	lease, margin := d.Span("lease", EdgeLeases), d.Span("margin", NearMargins[:2])
	return []program.Op{program.Claim{S: w, Lease: lease}, program.Near{W: w, Margin: margin}, renewal(w),
		program.Sleep{D: 2 * margin}, program.Claim{S: d.Other(w)}, program.Complete{S: w}}
}

// backoffEdge: a holder's failure, a pause to just before or just after its backoff ends, and
// another worker's claim there.
func backoffEdge(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	return []program.Op{lifecycle.Fail{S: w}, lifecycle.DueEdge{Margin: d.Span("margin", NearMargins), After: d.Bool("after")},
		program.Claim{S: d.Other(w)}}
}

// runAtEdge: a job enqueued to run later, a pause to just before or just after its run-at time,
// and a claim there.
func runAtEdge(d *Draw) []program.Op {
	w := d.Worker()
	return []program.Op{lifecycle.Later{S: w, Delay: d.Span("delay", LaterDelays)},
		lifecycle.DueEdge{Margin: d.Span("margin", NearMargins), After: d.Bool("after")}, program.Claim{S: w}}
}

// callComplete: a holder calls the destination with the effect of one of its tokens, mostly
// its newest, then presents that token's completion.
func callComplete(d *Draw) []program.Op {
	w, ok := d.Holder()
	if !ok {
		return nil
	}
	back := d.Choose(0, 2, "back")
	call := external.Call{S: w, Back: back}
	switch k := faultproxy.Kind(CallFaultWeights.At(d.Choose(0, CallFaultWeights.Total()-1, "call fault"))); k {
	case faultproxy.DropReply, faultproxy.Cut:
		call.Fault = faultproxy.Fault{Kind: k}
	case faultproxy.DelayReply:
		call.Fault = faultproxy.Fault{Kind: k, For: d.Span("hold", ScheduledHolds)}
	}
	return []program.Op{call, program.Complete{S: w, Back: back}}
}
