package linear

import "pgqcheck/program"

// Scheduled mode: a sequential prefix of operations and, for two or three sessions, a suffix
// each, all drawn through a chooser (rapid, or fuzz bytes), then, one step at a time, which
// session issues its next statement. The operations are the program package's, bound to
// sessions s0, s1, s2; what ran is saved as a program whose lines are the interleaving.

// Weights of scheduled mode's generator. Races are made of claims, transactions held open
// across other sessions' steps, expiries of jobs just claimed, and completions of older tokens.
var (
	PrefixWeights = program.Weights{"claim": 2, "complete": 1, "expire": 2, "enqueue": 1}
	SuffixWeights = program.Weights{"claim": 4, "complete": 4, "expire": 3, "claim-txn": 3, "lock-txn": 2, "enqueue": 1, "snapshot": 1}
)

// kindOrder fixes the order in which weighted kinds are laid out for drawing: the same
// choices give the same program on every run.
var kindOrder = []string{"claim", "complete", "expire", "claim-txn", "lock-txn", "enqueue", "snapshot"}

// drawn is a drawn scheduled program: a prefix run one operation at a time, then one suffix per
// session run concurrently under the drawn schedule. A suffix's length is drawn up front and
// each of its operations when the session starts it, so a failing program shows only what ran.
type drawn struct {
	prefix  []program.Op
	lengths []int // operations each session's suffix holds
	jobs    int   // enqueues drawn so far: job ids are 1, 2, ...
	prefixK []string
	suffixK []string
}

func weighted(w program.Weights, canLock bool) []string {
	var out []string
	for _, k := range kindOrder {
		if k == "lock-txn" && !canLock {
			continue
		}
		for i := 0; i < w[k]; i++ {
			out = append(out, k)
		}
	}
	return out
}

// drawOp draws one operation of session s from kinds.
func (p *drawn) drawOp(c chooser, label string, kinds []string, s string) program.Op {
	switch kinds[c.choose(0, len(kinds)-1, label)] {
	case "enqueue":
		p.jobs++
		return program.Enqueue{S: s, N: 1}
	case "claim":
		return program.Claim{S: s}
	case "complete":
		return program.Complete{S: s, Back: c.choose(0, 2, "back")}
	case "expire":
		// Mostly the job of a recent claim (a lease worth ending); else a job by id.
		if c.choose(0, 3, "expire by id") == 3 {
			return program.Expire{S: s, Job: int64(c.choose(1, p.jobs, "job"))}
		}
		return program.ExpireClaim{S: s, Back: c.choose(0, 2, "back")}
	case "snapshot":
		return program.Snapshot{S: s}
	case "claim-txn":
		commit := c.choose(0, 3, "rollback") < 3
		return program.ClaimTxn{S: s, Commit: commit, Complete: chooseBool(c, "complete in txn")}
	case "lock-txn":
		job := int64(c.choose(1, p.jobs, "job"))
		return program.LockTxn{S: s, Job: job, Commit: c.choose(0, 3, "rollback") < 3}
	}
	panic("unreachable")
}

// next draws the next operation of a session's suffix.
func (p *drawn) next(c chooser, session int) program.Op {
	return p.drawOp(c, opLabel(session), p.suffixK, program.ScheduledSession(session))
}

// drawProgram draws the sessions, the prefix, and the suffixes' lengths. A queue without
// lock.sql gets no lockers.
func drawProgram(c chooser, cfg ScheduledConfig, canLock bool) *drawn {
	p := &drawn{prefixK: weighted(PrefixWeights, canLock), suffixK: weighted(SuffixWeights, canLock)}
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
		p.prefix = append(p.prefix, p.drawOp(c, "prefix op", p.prefixK, program.ScheduledSession(s)))
	}
	for s := 0; s < n; s++ {
		p.lengths = append(p.lengths, c.choose(1, cfg.MaxSuffix, labelSuffix))
	}
	return p
}
