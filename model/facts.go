package model

import "time"

// Facts is what one operation of a history, answered as it was, says of the job it names: what
// every reader of histories (the accounting, the crash checks, the counts, the measures) follows
// a job by. Each kind of operation says it once (spec.facts), so that no reader asks which kind
// an operation is. Whether the answer came back is the Output's Outcome: a fact holds where it
// did, and may hold (the statement may have taken effect) where it was lost.
type Facts struct {
	Job   int64 // the job it names, where Named
	Named bool
	// Statement is the statement it was, as counts and measures name it: one snapshot is one
	// statement, however many jobs' rows it observed.
	Statement string
	Gen       int64         // the generation a claim returned, or a write presented
	Lease     time.Duration // the lease a claim asked for
	// Writes: it may change its job's state (a claim that took it, a completion, an expiry, a
	// renewal, a failure, a rescue).
	Writes bool
	// Creates: an enqueue, of a job due only later where Later (a run-at delay).
	Creates, Later bool
	// Claims: a claim; Took: one that returned its job.
	Claims, Took bool
	// Ends, Fails, Renews: a completion, a failure (Final: not to be retried), a renewal, each
	// presenting generation Gen; Accepted: the queue says it changed the job (one row, or a
	// heartbeat's job).
	Ends, Fails, Final, Renews, Accepted bool
	Expires                              bool // the expiry hook
	Rescues                              bool // the rescue step took the job
	Observes                             bool // a snapshot's row of the job (Output.Found: the snapshot held it)
	Effect                               bool // a business effect committed with its completion
	Tallies                              bool // the business table's count of the job's effects (Output.Rows)
	// Locks and Unlocks: a locker took, or released, the job's row lock.
	Locks, Unlocks bool
	// Tally names the count an accepted answer adds to, for a kind whose count no field of the
	// counts keeps (an operation the queue ships of its own).
	Tally string
}

// FactsOf is what an operation, answered as out, says of its job.
func FactsOf(in Input, out Output) Facts { return specOf(in.Kind).facts(in, out) }

// JobOf returns the job an operation belongs to, when its input or output names one.
func JobOf(in Input, out Output) (int64, bool) {
	f := FactsOf(in, out)
	return f.Job, f.Named
}
