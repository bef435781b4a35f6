package linear

import (
	"time"

	"pgqcheck/program"
	"pgqcheck/sut"
)

// Scheduled mode: a sequential prefix of operations and, for two or three sessions, a suffix
// each, all drawn through a chooser (rapid, or fuzz bytes), then, one step at a time, which
// session issues its next statement. The operations are the program package's, bound to
// sessions s0, s1, s2; what ran is saved as a program whose lines are the interleaving.

// Weights of scheduled mode's generator. Races are made of claims, transactions held open
// across other sessions' steps, expiries of jobs just claimed, and completions of older tokens.
//
// Real time comes in through claims whose leases end by themselves (timed-claim; in the prefix
// too, so that the concurrent part can start with such a lease), such a claim followed by the
// session's pause to just before or just after that lease's end (lease-edge), the same with the
// holder's completion at that edge (edge-complete: before it the completion must be accepted,
// after it refused), that pause alone on the session's newest lease (near-end), plain pauses
// (real-pause), and claim transactions that wait before their claim and before their
// completion (timed-claim-txn).
// A suffix operation of kind real-time is one of those, drawn by RealTimeWeights. Every pause
// stops the whole schedule for a tenth of a second or more, where a run without one lasts
// milliseconds, so pauses are a small part of that share and timed claims, which cost
// nothing, most of it.
var (
	PrefixWeights   = program.Weights{"claim": 2, "complete": 1, "expire": 2, "enqueue": 1, "timed-claim": 1}
	SuffixWeights   = program.Weights{"claim": 4, "complete": 4, "expire": 3, "claim-txn": 3, "lock-txn": 2, "enqueue": 1, "snapshot": 1, "real-time": 1, "proxy-fault": 2, "rescue": 2}
	RealTimeWeights = program.Weights{"timed-claim": 40, "lease-edge": 2, "near-end": 1, "real-pause": 1, "timed-claim-txn": 1, "edge-complete": 8}
	// EdgeLeases are the leases a lease-edge claim draws: the shorter of program.TimedLeases,
	// since the whole schedule then waits that lease out.
	EdgeLeases = program.TimedLeases[:2]
)

// kindOrder fixes the order in which weighted kinds are laid out for drawing: the same
// choices give the same program on every run. New kinds go at the end, so that the inputs
// saved before them (FuzzScheduled's corpus) still draw what they drew.
var kindOrder = []string{"claim", "complete", "expire", "claim-txn", "lock-txn", "enqueue", "snapshot",
	"real-time", "timed-claim", "lease-edge", "near-end", "real-pause", "timed-claim-txn", "edge-complete",
	"proxy-fault", "rescue"}

// capable is what the queue ships beyond the contract's core: kinds that need a file it lacks
// are not drawn.
type capable struct{ lock, rescue bool }

func capabilities(q *sut.Queue) capable { return capable{lock: q.CanLock(), rescue: q.CanRescue()} }

// drawn is a drawn scheduled program: a prefix run one operation at a time, then one suffix per
// session run concurrently under the drawn schedule. A suffix's length is drawn up front and
// each of its operations when the session starts it, so a failing program shows only what ran.
type drawn struct {
	prefix    []program.Op
	lengths   []int // operations each session's suffix holds
	jobs      int   // enqueues drawn so far: job ids are 1, 2, ...
	prefixK   []string
	suffixK   []string
	realTimeK []string
}

func weighted(w program.Weights, can capable) []string {
	var out []string
	for _, k := range kindOrder {
		if k == "lock-txn" && !can.lock || k == "rescue" && !can.rescue {
			continue
		}
		for i := 0; i < w[k]; i++ {
			out = append(out, k)
		}
	}
	return out
}

// drawOp draws one operation of session s from kinds, as the operations it runs: mostly one,
// or a few that belong together (a timed claim and the pause to its lease's edge). A program
// holds them, and a shrink removes them, together.
func (p *drawn) drawOp(c chooser, label string, kinds []string, s string) []program.Op {
	one := func(op program.Op) []program.Op { return []program.Op{op} }
	switch kinds[c.choose(0, len(kinds)-1, label)] {
	case "enqueue":
		p.jobs++
		return one(program.Enqueue{S: s, N: 1})
	case "claim":
		return one(program.Claim{S: s})
	case "complete":
		return one(program.Complete{S: s, Back: c.choose(0, 2, "back")})
	case "expire":
		// Mostly the job of a recent claim (a lease worth ending); else a job by id.
		if c.choose(0, 3, "expire by id") == 3 {
			return one(program.Expire{S: s, Job: int64(c.choose(1, p.jobs, "job"))})
		}
		return one(program.ExpireClaim{S: s, Back: c.choose(0, 2, "back")})
	case "snapshot":
		return one(program.Snapshot{S: s})
	case "rescue":
		return one(program.Rescue{S: s})
	case "claim-txn":
		commit := c.choose(0, 3, "rollback") < 3
		return one(program.ClaimTxn{S: s, Commit: commit, Complete: chooseBool(c, "complete in txn")})
	case "lock-txn":
		job := int64(c.choose(1, p.jobs, "job"))
		return one(program.LockTxn{S: s, Job: job, Commit: c.choose(0, 3, "rollback") < 3})
	case "real-time":
		return p.drawOp(c, "real time", p.realTimeK, s)
	case "timed-claim":
		return one(timedClaim(c, s))
	case "proxy-fault":
		return drawProxyFault(c, s)
	case "lease-edge":
		// What the session does next, or another session's claim or snapshot, lands at the
		// edge of the lease it just took.
		return []program.Op{program.Claim{S: s, Lease: pick(c, "lease", EdgeLeases)}, near(c, s)}
	case "edge-complete":
		// The holder's next statement is its completion, at the edge the pause reached: a
		// lease that ends early, or a completion that accepts a late one, shows here.
		return []program.Op{program.Claim{S: s, Lease: pick(c, "lease", EdgeLeases)}, near(c, s), program.Complete{S: s}}
	case "near-end":
		return one(near(c, s))
	case "real-pause":
		return one(program.Sleep{D: pick(c, "pause", program.RealPauses)})
	case "timed-claim-txn":
		commit := c.choose(0, 3, "rollback") < 3
		return one(program.ClaimTxn{S: s, Commit: commit, Complete: chooseBool(c, "complete in txn"),
			Wait: pick(c, "wait", program.TxnWaits), Lease: pick(c, "lease", program.TimedLeases), Hold: pick(c, "hold", program.TxnHolds)})
	}
	panic("unreachable")
}

func timedClaim(c chooser, s string) program.Op {
	return program.Claim{S: s, Lease: pick(c, "lease", program.TimedLeases)}
}

// near pauses session s until just before or just after its own newest lease ends.
func near(c chooser, s string) program.Op {
	return program.Near{W: s, Margin: pick(c, "margin", program.NearMargins), After: chooseBool(c, "after")}
}

// pick draws one of a scale's spans; the first, the plain choice, is its shortest.
func pick(c chooser, label string, scale []time.Duration) time.Duration {
	return scale[c.choose(0, len(scale)-1, label)]
}

// next draws the next operation of a session's suffix.
func (p *drawn) next(c chooser, session int) []program.Op {
	return p.drawOp(c, opLabel(session), p.suffixK, program.ScheduledSession(session))
}

// drawProgram draws the sessions, the prefix, and the suffixes' lengths. A queue without
// lock.sql gets no lockers, one without rescue.sql no rescues.
func drawProgram(c chooser, cfg ScheduledConfig, can capable) *drawn {
	p := &drawn{prefixK: weighted(PrefixWeights, can), suffixK: weighted(SuffixWeights, can), realTimeK: weighted(RealTimeWeights, can)}
	n := c.choose(2, max(2, cfg.Sessions), "sessions")
	p.jobs = c.choose(1, 5, "jobs")
	for i := 0; i < p.jobs; i++ {
		p.prefix = append(p.prefix, program.Enqueue{S: program.ScheduledSession(0), N: 1})
	}
	// Sessions that hold a token when the concurrent part starts are what stale completions
	// are made of.
	for s := 0; s < n; s++ {
		if chooseBool(c, "prefix claim") {
			p.prefix = append(p.prefix, program.Claim{S: program.ScheduledSession(s)})
		}
	}
	for i, k := 0, c.choose(0, cfg.MaxPrefix, labelPrefixCount); i < k; i++ {
		s := c.choose(0, n-1, labelPrefixSession)
		p.prefix = append(p.prefix, p.drawOp(c, "prefix op", p.prefixK, program.ScheduledSession(s))...)
	}
	for s := 0; s < n; s++ {
		p.lengths = append(p.lengths, c.choose(1, cfg.MaxSuffix, labelSuffix))
	}
	return p
}
