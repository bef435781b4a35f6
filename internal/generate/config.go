package generate

import (
	"sort"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
	"github.com/pgqcheck/pgqcheck/model"
)

// Weights is how often a generator draws each kind of operation: generation is configuration,
// and nothing about weights lives in the operations.
type Weights map[string]int

// Total is the sum of the weights.
func (w Weights) Total() int {
	n := 0
	for _, v := range w {
		n += v
	}
	return n
}

// At is the kind that x, in [0, Total()), falls on, the kinds laid out in name order, so the
// same draw always picks the same kind.
func (w Weights) At(x int) string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if x < w[k] {
			return k
		}
		x -= w[k]
	}
	return ""
}

// Kind is one kind of operation the generators draw: its weight in each mode's column, what
// the queue must ship for it, and how it is drawn.
type Kind struct {
	Name string
	// Seq and SeqRT weigh it in the Prop state machines (without and with real time passing);
	// Prefix and Suffix in a scheduled program's prefix and sessions; RealTime among the kinds
	// a suffix's "real-time" kind draws.
	Seq, SeqRT, Prefix, Suffix, RealTime int
	// Needs is what the kind needs of what the queue ships (and the run provides) to be drawn;
	// nil: nothing beyond the core.
	Needs func(model.Can) bool
	// Draw draws the kind's operations: usually one, or a few that belong together (a timed
	// claim and the pause to its lease's edge), which a program holds and a shrink removes
	// together. None: the kind does not apply now.
	Draw func(d *Draw) []program.Op
}

// Kinds is every kind, in the order scheduled layouts lay them out: a new kind goes at the end,
// so that the inputs saved before it (FuzzScheduled's corpus) draw what they drew.
//
// The sequential mix: the seed's hard case (claim, pause past the lease, reclaim, stale
// completion) needs claims, pauses and completions to dominate; a drain ends most interesting
// states. Scheduled races are made of claims, transactions held open across other sessions'
// steps, expiries of jobs just claimed, and completions of older tokens. Real time comes in
// through claims whose leases end by themselves, pauses to just before or just after a lease's
// end (alone, or followed by the holder's completion at that edge), plain pauses, and claim
// transactions that wait before their claim and before their completion. Every pause stops a
// whole schedule for a tenth of a second or more, where a run without one lasts milliseconds,
// so pauses are a small part of the real-time share and timed claims, which cost nothing, most
// of it.
var Kinds = []*Kind{
	{Name: "claim", Seq: 4, SeqRT: 4, Prefix: 2, Suffix: 4, Draw: claim},
	{Name: "complete", Seq: 4, SeqRT: 4, Prefix: 1, Suffix: 4, Draw: complete},
	{Name: "expire-claimed", Prefix: 2, Suffix: 3, Draw: expireClaimed},
	{Name: "claim-txn", Seq: 1, Suffix: 3, Draw: func(d *Draw) []program.Op { return claimTxn(d, false) }},
	{Name: "lock-txn", Suffix: 2, Needs: locks, Draw: lockTxn},
	{Name: "enqueue-one", Prefix: 1, Suffix: 1, Draw: enqueueOne},
	{Name: "snapshot", Suffix: 1, Draw: func(d *Draw) []program.Op { return one(program.Snapshot{S: d.Worker()}) }},
	{Name: "real-time", Suffix: 1, Draw: func(d *Draw) []program.Op { return d.From(RealTime, "real time") }},
	{Name: "timed-claim", SeqRT: 2, Prefix: 1, RealTime: 40, Draw: timedClaim},
	{Name: "lease-edge", RealTime: 2, Draw: leaseEdge},
	{Name: "near", RealTime: 1, Draw: near},
	{Name: "real-pause", SeqRT: 1, RealTime: 1, Draw: func(d *Draw) []program.Op { return one(program.Sleep{D: d.Span("pause", RealPauses)}) }},
	{Name: "timed-claim-txn", SeqRT: 1, RealTime: 1, Draw: func(d *Draw) []program.Op { return claimTxn(d, true) }},
	{Name: "edge-complete", RealTime: 8, Draw: edgeComplete},
	{Name: "proxy-fault", Suffix: 2, Draw: proxyFault},
	{Name: "rescue", Seq: 2, SeqRT: 2, Suffix: 2, Needs: rescues, Draw: func(d *Draw) []program.Op { return one(program.Rescue{S: d.Worker()}) }},
	{Name: "enqueue", Seq: 3, SeqRT: 3, Draw: func(d *Draw) []program.Op { return one(program.Enqueue{N: d.Choose(1, 3, "n")}) }},
	{Name: "expire", Seq: 1, SeqRT: 1, Draw: expire},
	{Name: "lock", Seq: 2, SeqRT: 2, Needs: locks, Draw: lock},
	{Name: "release", Seq: 2, SeqRT: 2, Needs: locks, Draw: release},
	{Name: "crash", Seq: 1, SeqRT: 1, Draw: onHolder(func(w string) program.Op { return program.Crash{W: w} })},
	{Name: "drain", Seq: 1, SeqRT: 1, Draw: func(d *Draw) []program.Op { return one(program.Drain{S: d.Worker()}) }},
	{Name: "pause", Seq: 2, SeqRT: 2, Draw: onHolder(func(w string) program.Op { return program.Pause{W: w} })},
	{Name: "fuzz-claim-txn", Draw: fuzzClaimTxn},
	{Name: "overslept", Seq: 1, SeqRT: 1, Draw: onHolder(func(w string) program.Op { return program.Overslept{W: w} })},
	{Name: "replaced", Seq: 1, SeqRT: 1, Draw: replaced},
	{Name: "edge-then", SeqRT: 2, Draw: edgeThen},
	// The lifecycle's, drawn where the queue ships what they need (fail.sql, renew.sql, a run-at
	// delay, effect.sql): failures (mostly retryable) and renewals of a held token, mostly the
	// newest; enqueues due later; completions that carry their business effect; and in real
	// time, a renewal that keeps a lease past its first end while another worker claims, and
	// pauses to the edge of a backoff or a run-at time followed by a claim.
	{Name: "fail", Seq: 3, SeqRT: 2, Prefix: 1, Suffix: 2, Needs: fails, Draw: fail},
	{Name: "renew", Seq: 2, SeqRT: 1, Suffix: 2, Needs: renews, Draw: renew},
	{Name: "heartbeat", Seq: 2, SeqRT: 1, Suffix: 2, Needs: heartbeats, Draw: heartbeat},
	{Name: "enqueue-later", Seq: 1, SeqRT: 1, Prefix: 1, Suffix: 1, Needs: delays, Draw: enqueueLater},
	{Name: "effect-complete", Seq: 3, SeqRT: 2, Suffix: 2, Needs: effects, Draw: effectComplete},
	{Name: "renew-edge", SeqRT: 2, Needs: renews, Draw: renewEdge},
	{Name: "heartbeat-edge", SeqRT: 2, Needs: heartbeats, Draw: heartbeatEdge},
	{Name: "backoff-edge", SeqRT: 2, Needs: fails, Draw: backoffEdge},
	{Name: "run-at-edge", SeqRT: 1, Needs: delays, Draw: runAtEdge},
	{Name: "count-effects", Suffix: 1, Needs: effects, Draw: func(d *Draw) []program.Op { return one(lifecycle.CountEffects{S: d.Worker()}) }},
	// Statements landed at a lease's edge as closely as the claim's window allows, and
	// transactions open across an edge (edges.go): what resolves a lease read a few
	// milliseconds wrong, or read at the transaction's start.
	// Scheduled layouts leave them out: a new weight in a scheduled column would give every
	// saved FuzzScheduled input another meaning (its choices are positions in the layouts).
	{Name: "tight-edge-then", SeqRT: 4, Draw: tightEdgeThen},
	{Name: "tight-claim-txn", SeqRT: 2, Draw: tightClaimTxn},
	{Name: "tight-complete-txn", SeqRT: 2, Draw: tightCompleteTxn},
	{Name: "tight-rescue-txn", SeqRT: 2, Needs: rescues, Draw: tightRescueTxn},
	{Name: "tight-rescue-edge", SeqRT: 3, Needs: rescues, Draw: tightRescueEdge},
	// A worker's external effect, called between its claim and its completion, where the run
	// has a destination (effectdest); now and then with a fault on the call. Its stale callers
	// come from the pauses past the lease and the older tokens drawn as for completions.
	{Name: "call-complete", Seq: 4, SeqRT: 3, Needs: calls, Draw: callComplete},
	// A job cancelled from outside, whoever holds it (cancel.sql).
	{Name: "cancel", Seq: 2, SeqRT: 1, Suffix: 1, Needs: func(c model.Can) bool { return c.Cancel }, Draw: func(d *Draw) []program.Op {
		s := d.Worker()
		if id, ok := d.Job(); ok {
			return one(lifecycle.Cancel{S: s, Job: id})
		}
		return nil
	}},
	// The owner's snooze of a held token, mostly its newest, for one of the run-at delays
	// (snooze.sql).
	{Name: "snooze", Seq: 2, SeqRT: 1, Suffix: 1, Needs: func(c model.Can) bool { return c.Snooze }, Draw: func(d *Draw) []program.Op {
		if w, ok := d.Holder(); ok {
			return one(lifecycle.Snooze{S: w, Back: d.Choose(0, 1, "back"), Delay: d.Span("delay", LaterDelays)})
		}
		return nil
	}},
	// An enqueue by one of two keys, so that keys collide (enqueue_unique.sql). In a scheduled
	// program it may take the next job's position, or leave it to a later enqueue: an operation
	// on a position no job took does not apply.
	{Name: "enqueue-unique", Seq: 2, SeqRT: 1, Prefix: 1, Suffix: 1, Needs: func(c model.Can) bool { return c.Unique }, Draw: func(d *Draw) []program.Op {
		d.Enqueued(1)
		return one(lifecycle.EnqueueUnique{S: d.Worker(), Key: d.Choose(0, 1, "key")})
	}},
}

// What the kinds need: each a capability of model.Can.
func locks(c model.Can) bool      { return c.Lock }
func rescues(c model.Can) bool    { return c.Rescue }
func fails(c model.Can) bool      { return c.Fail }
func renews(c model.Can) bool     { return c.Renew }
func heartbeats(c model.Can) bool { return c.Heartbeat }
func delays(c model.Can) bool     { return c.Delay }
func effects(c model.Can) bool    { return c.Effect }
func calls(c model.Can) bool      { return c.External }

// FuzzCodes is FuzzQueue's encoding: a step's first byte, modulo their number, is the position
// of its kind here. New kinds go at the end, which keeps every corpus file written by the
// encoder (fuzz.Encode) meaning what it meant.
var FuzzCodes = []string{"enqueue", "claim", "complete", "expire", "lock", "release", "crash", "drain",
	"pause", "timed-claim", "near", "real-pause", "fuzz-claim-txn",
	"fail", "renew", "heartbeat", "enqueue-later", "effect-complete",
	"tight-edge-then", "tight-claim-txn", "tight-complete-txn", "tight-rescue-txn", "tight-rescue-edge",
	"cancel", "snooze", "enqueue-unique"}

// The real-time scales: lease lengths of their own (beside the long lease of a plain claim),
// margins around a lease's end, pauses, and a claim transaction's waits. All short, so that a
// run stays fast; the windows the model judges by come from measured clock readings, so short
// spans cost power on a slow machine, never a false alarm.
var (
	TimedLeases = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	NearMargins = []time.Duration{10 * time.Millisecond, 40 * time.Millisecond, 120 * time.Millisecond}
	RealPauses  = []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond}
	TxnWaits    = []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond}
	TxnHolds    = []time.Duration{0, 150 * time.Millisecond, 300 * time.Millisecond}
	// EdgeLeases are the leases a lease-edge claim draws: the shorter timed leases, since the
	// whole schedule then waits that lease out.
	EdgeLeases = TimedLeases[:2]
	// LaterDelays are the run-at delays of jobs enqueued to run later: short, since a drain
	// waits for the last of them.
	LaterDelays = []time.Duration{50 * time.Millisecond, 250 * time.Millisecond, time.Second}
)

// CallFaultWeights is how often a call of a destination meets each fault ("none": none).
var CallFaultWeights = Weights{"none": 6, string(faultproxy.DropReply): 2, string(faultproxy.Cut): 1, string(faultproxy.DelayReply): 1}

// A scheduled proxy fault is the fault, then the statement it hits, one of ProxyHits; in a
// claim transaction ("txn": begin, claim, maybe complete, then commit or rollback) the fault
// comes before the statement drawn, so that a lost COMMIT (the seed's uncertain commit) and a
// claim lost inside an open transaction (a known rollback) are both drawn. A delay or a stall
// holds for one of ScheduledHolds.
var (
	ProxyHits      = []string{"claim", "complete", "txn", "expire", "enqueue", "snapshot"}
	ScheduledHolds = []time.Duration{time.Millisecond, 20 * time.Millisecond}
)

// Stress traffic's mix (weights are relative; Weights lays each out in name order): the lease
// a worker's claim asks for ("long" is the run's, which outlives it; "timed" one of TimedLeases,
// which ends by itself); how long a worker holds a job it claimed with a timed lease before what
// comes next (not at all, until just before or just after that lease's end, or a plain pause);
// whether a worker that took a timed lease keeps a transaction open across its edge (its
// claim's, completing after it; or a second claim's, claiming after it); what a worker does
// with a job it claimed ("keep" holds the token and claims again); what the chaos goroutine
// does each turn ("rest" does nothing); how the chaos locker's transaction
// ends; the proxy faults chaos arms, a delay or a stall holding for one of NetFaultHolds.
//
// A worker that waits for a lease's end stops for a tenth of a second or more, where a turn
// without one takes a few milliseconds: those waits are rare, so that they take a small part
// of a run's time, and timed claims completed at once, which cost nothing, are most of them.
var (
	LeaseWeights      = Weights{"long": 96, "timed": 4}
	TimedHoldWeights  = Weights{"at once": 88, "until before its end": 4, "until after its end": 4, "pause": 4}
	EdgeTxnWeights    = Weights{"none": 90, "complete across its end": 5, "claim across its end": 5}
	AfterClaimWeights = Weights{"complete": 85, "crash": 5, "complete older": 7, "keep": 3}
	ChaosWeights      = Weights{"expire": 450, "lock": 150, "cancel": 20, "terminate": 5, "snapshot": 10, "rest": 365, "net": 20}
	ReleaseWeights    = Weights{"commit": 40, "rollback": 30, "cancel": 15, "terminate": 15}
	NetFaultWeights   = Weights{string(faultproxy.DropReply): 4, string(faultproxy.Cut): 2, string(faultproxy.DelayReply): 2, string(faultproxy.Stall): 2}
	NetFaultHolds     = []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}
	// The lifecycle's, drawn where the queue ships what each needs (fail.sql, renew.sql, effect.sql,
	// a run-at delay) and skipped elsewhere: what a worker does with a job it claimed before what
	// AfterClaimWeights draws ("as before": nothing more; "renew" renews its lease, or beats its
	// heartbeat, and goes on; "fail" reports a failure, mostly retryable, in place of the
	// completion; "effect" completes it in one transaction with its business effect), and
	// whether the enqueuer's next job is due at once or after one of LaterDelays.
	LifeWeights    = Weights{"as before": 82, "fail": 8, "renew": 5, "effect": 5}
	EnqueueWeights = Weights{"now": 9, "later": 1}
)
