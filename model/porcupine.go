package model

// The concurrent specification: the queue as porcupine sees it (property 7).
//
// Under concurrency the sequential specification is relaxed in exactly the ways the design
// reference names, and in no other:
//
//   - An empty claim is always legal. SKIP LOCKED skips rows that in-flight transactions hold,
//     and a history does not say which rows those were, so "nothing came back" can always be
//     explained. (An empty claim marked Strict is the exception: the harness issued it while no
//     other session could hold a row lock or claim, so its answer must be justified.)
//   - Claim order is not checked. Which eligible job a claim returns depends on which rows other
//     transactions hold locked at that instant; lowest-id order is a sequential promise only.
//   - An operation whose outcome is unknown (the request was sent, the answer never came back)
//     may or may not have taken effect, at any instant after it was called.
//
// Leases are database times. Each operation carries the window of database time in which it
// ran (the clock read just before and just after it, see Window), and a claim the lease length
// it asked for; a job's lease ends somewhere in the claim's window shifted by that length. An
// operation sees a lease certainly live, certainly over, or either, and in the last case both
// answers are legal. (Histories saved before leases were timed carry no windows and no lease
// lengths: their claims' leases outlive the run, and only expire ends one.)

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// OpKind names an operation of a concurrent history.
type OpKind string

const (
	OpEnqueue  OpKind = "enqueue"
	OpClaim    OpKind = "claim"
	OpComplete OpKind = "complete"
	OpExpire   OpKind = "expire"
	// OpObserve is one job's row as a snapshot statement reported it. A snapshot reads every row
	// at one instant; it is split into one observation per job so that it fits the partitions.
	OpObserve OpKind = "observe"
	// OpLock and OpUnlock are a locker taking and releasing a job's row lock. They change no
	// job's state, so the model ignores them; they are recorded for the timeline, and what they
	// constrain (a claim must skip a locked row, not wait for it) is checked where waits are seen.
	OpLock   OpKind = "lock"
	OpUnlock OpKind = "unlock"
	// OpRescue is the queue's rescue step making one job ready (Found, Job), one operation per
	// job it returned; an unknown rescue (Outcome Unknown) may have made any expired job ready.
	// Under concurrency a rescue that leaves a job alone is always legal: it may have skipped
	// the row, locked by a transaction in flight.
	OpRescue OpKind = "rescue"
	// The lifecycle's: the current owner reports a failure (retryable or not, with an error
	// text); the owner renews its lease (per job; or, where leases are the worker's, its
	// heartbeat, one operation per job it extended, Found and Job); a business effect committed
	// with its completion's transaction; one job's count in the business table, as the effects
	// statement reported it.
	OpFail    OpKind = "fail"
	OpRenew   OpKind = "renew"
	OpEffect  OpKind = "effect"
	OpEffects OpKind = "effects"
)

// Input is what a session asked for.
type Input struct {
	Kind OpKind `json:"kind"`
	// Job is the job a complete, expire, lock, unlock or observe names. The partition function
	// also sets it on the copies of operations that name no job (see Shape.PartitionByJob), so that a
	// copy knows which job it speaks about.
	Job     int64  `json:"job,omitempty"`
	Gen     int64  `json:"gen,omitempty"`     // complete: the generation presented
	Payload string `json:"payload,omitempty"` // enqueue
	// Strict marks a claim issued while no other session could hold a row lock or claim
	// concurrently: an empty answer to it must be justified by no job being eligible.
	Strict bool `json:"strict,omitempty"`
	// At is the database time the statement ran in (To is Never when its answer was lost).
	At Window `json:"at,omitempty"`
	// Lease is the lease length a claim or a renewal asked for (0: one that outlives the run).
	Lease time.Duration `json:"lease,omitempty"`
	// Delay is an enqueue's run-at delay: the job is due that long after the enqueue ran.
	Delay time.Duration `json:"delay,omitempty"`
	// Retryable and Text are a failure's report.
	Retryable bool   `json:"retryable,omitempty"`
	Text      string `json:"text,omitempty"`
	// Worker is the worker a claim is for and a heartbeat is from, where leases are the worker's.
	Worker string `json:"worker,omitempty"`
}

// Outcome says whether an operation's answer came back.
type Outcome string

const (
	// Returned: the answer came back; the output holds it.
	Returned Outcome = ""
	// Unknown: the request was sent and the answer never came back (connection lost, backend
	// terminated, statement cancelled). It may or may not have taken effect; such an operation
	// is recorded with return time +infinity.
	Unknown Outcome = "unknown"
	// NotSent: the request never reached the server. It had no effect.
	NotSent Outcome = "not-sent"
	// Aborted: its transaction rolled back (the server confirmed the rollback, or the
	// transaction's COMMIT was never sent). It had no effect.
	Aborted Outcome = "aborted"
)

// Output is what came back.
type Output struct {
	Outcome Outcome `json:"outcome,omitempty"`
	// Found: a claim returned a row; an observation found the job's row.
	Found bool   `json:"found,omitempty"`
	Job   int64  `json:"job,omitempty"`   // claim, enqueue: the id that came back
	Gen   int64  `json:"gen,omitempty"`   // claim, observe
	Rows  int64  `json:"rows,omitempty"`  // complete: rows completed
	State State  `json:"state,omitempty"` // observe
	Live  bool   `json:"live,omitempty"`  // observe: lease_live (meaningful for running jobs)
	Err   string `json:"err,omitempty"`   // the error, when the statement failed
	// Attempts and Kept: an observation's attempts and kept error text, on a queue with a
	// lifecycle. Rows is also a fail's or renewal's rows changed and an effects count.
	Attempts int64  `json:"attempts,omitempty"`
	Kept     string `json:"kept,omitempty"`
}

// StepJob is the concurrent specification of one job of a queue of the seed's shape.
func StepJob(s JobState, in Input, out Output) (JobState, *Violation) {
	return Shape{}.StepJob(s, in, out)
}

// StepJob is the concurrent specification of one job: the state after the operation, or the
// violation that makes the operation impossible in state s (see spec.step). An operation that
// was not sent, or whose transaction rolled back, had no effect. What the queue does that it
// does not promise is possible: the accounting counts it apart.
func (sh Shape) StepJob(s JobState, in Input, out Output) (JobState, *Violation) {
	if out.Outcome == NotSent || out.Outcome == Aborted {
		return s, nil
	}
	next, v := specOf(in.Kind).step(sh, s, in, out)
	if v != nil && v.NotPromised {
		return next, nil
	}
	return next, v
}

// Ignored reports whether an operation constrains no job at all, so that partitions leave it
// out: it had no effect (not sent, aborted), it is a non-strict empty claim (always legal under
// the relaxation, so it can be linearized anywhere), or it is a lock or unlock (no state).
func Ignored(in Input, out Output) bool {
	return out.Outcome == NotSent || out.Outcome == Aborted || specOf(in.Kind).ignored(in, out)
}

// PartitionByJob splits a history of a queue of this shape into one sub-history per job,
// ordered by job id.
//
// Why this is sound. Under the relaxations above, the queue is a set of independent objects,
// one per job: an operation that names a job (an enqueue that returned its id, a claim that
// returned it, a completion, an expiry, an observation of its row) reads and writes that job
// only. Linearizability is local (Herlihy and Wing): a history of independent objects is
// linearizable iff each object's sub-history is. An empty claim is always legal, so it
// constrains nothing and is dropped. Three kinds of operation name no job, or several:
//
//   - A claim with an unknown outcome may have claimed any one job. It is copied into every
//     job's partition as "may have claimed this job". That over-approximates (the copies may
//     claim several jobs), which can hide a bug but never raise a false alarm. Each copy can
//     act only while its job is eligible, and a job becomes eligible only through its enqueue,
//     an expiry or a claim whose lease ends by itself, so at most that many copies can take
//     effect in one partition, plus one for each copy whose own lease ends by itself. Copies
//     whose leases outlive the history and that ask the same lease (and, where a lease is its
//     worker's, name the same worker, whom a heartbeat must match) are interchangeable except
//     for their call times (and windows, which only widen the earlier), and an earlier-called
//     copy can be linearized wherever a later-called one can, so keeping only that many of
//     them, the earliest called, decides exactly the same thing; a copy whose lease ends by
//     itself is always kept. A copy called after an accepted completion of the job returned
//     cannot take effect (done is terminal), and is left out. This keeps long histories
//     cheap.
//   - An enqueue with an unknown outcome has no id. It is copied, as "may have created this
//     job", into the partitions of jobs that no returned enqueue created; one copy suffices
//     (only the first can take effect), the earliest called.
//   - A strict empty claim says "no job was eligible" at one instant. It is copied into every
//     job's partition, each copy free to be linearized at its own instant within the claim's
//     interval: again weaker than the truth, never stronger. A copy is left out where it
//     cannot fail: the job's enqueue was called after the claim returned (it did not exist),
//     or an accepted completion of it returned before the claim was called (it was done).
func (sh Shape) PartitionByJob(history []porcupine.Operation) [][]porcupine.Operation {
	return partitionByJob(history, false, sh.Life.WorkerLease)
}

// partitionByJob is PartitionByJob; everyCopy keeps every copy of every operation that names
// no job, which the tests use to show that leaving copies out decides the same; byWorker tells
// unknown claims of different workers apart.
func partitionByJob(history []porcupine.Operation, everyCopy, byWorker bool) [][]porcupine.Operation {
	byJob := map[int64][]porcupine.Operation{}
	p := &partitioner{everyCopy: everyCopy, byWorker: byWorker, unnamed: map[spread][]porcupine.Operation{}}
	for _, op := range history {
		in, ok1 := op.Input.(Input)
		out, ok2 := op.Output.(Output)
		if !ok1 || !ok2 || Ignored(in, out) {
			continue
		}
		if id, ok := JobOf(in, out); ok {
			byJob[id] = append(byJob[id], op)
			continue
		}
		k := specOf(in.Kind).spread(in, out)
		p.unnamed[k] = append(p.unnamed[k], op)
	}
	p.prepare(history)
	// A job that no operation names has nothing to check, so copies go only to named jobs.
	ids := make([]int64, 0, len(byJob))
	for id := range byJob {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	out := make([][]porcupine.Operation, 0, len(ids))
	for _, id := range ids {
		out = append(out, p.part(id, byJob[id]))
	}
	return out
}

// partitioner adds to each job's operations the copies of those that name no job.
type partitioner struct {
	everyCopy bool
	// byWorker: a claim's lease is its worker's, so unknown claims of different workers are not
	// interchangeable.
	byWorker bool
	unnamed  map[spread][]porcupine.Operation
	// lapses says whether a claim's lease ends by itself within the history, which makes its
	// job eligible again; one that outlives the history's last clock reading does not.
	lapses func(Input) bool
	// lapsingCopies counts the unknown claims whose own lease can end so: each can be followed
	// by another copy, so every one is kept.
	lapsingCopies int
}

func (p *partitioner) prepare(history []porcupine.Operation) {
	byCall := func(ops []porcupine.Operation) {
		sort.SliceStable(ops, func(a, b int) bool { return ops[a].Call < ops[b].Call })
	}
	byCall(p.unnamed[spreadAnyJob])
	byCall(p.unnamed[spreadNewJob])
	last := time.Duration(0)
	for _, op := range history {
		if in, ok := op.Input.(Input); ok && in.At.To != Never {
			last = max(last, in.At.To)
		}
	}
	p.lapses = func(in Input) bool { return in.Lease != 0 && in.At.From+in.Lease <= last }
	for _, op := range p.unnamed[spreadAnyJob] {
		if p.lapses(op.Input.(Input)) {
			p.lapsingCopies++
		}
	}
}

// part is job id's partition: its own operations and the copies that may speak of it.
func (p *partitioner) part(id int64, part []porcupine.Operation) []porcupine.Operation {
	windows, enqueuedAt, doneBy := 0, int64(-1), int64(-1)
	for _, op := range part {
		in, o := op.Input.(Input), op.Output.(Output)
		if specOf(in.Kind).opens(in, o, p.lapses) {
			windows++
		}
		f, returned := FactsOf(in, o), o.Outcome == Returned
		if f.Creates && returned && (enqueuedAt < 0 || op.Call < enqueuedAt) {
			enqueuedAt = op.Call
		}
		if f.Ends && f.Accepted && returned && (doneBy < 0 || op.Return < doneBy) {
			doneBy = op.Return
		}
	}
	unknownEnqueues := p.unnamed[spreadNewJob]
	switch {
	case enqueuedAt >= 0:
	case p.everyCopy:
		for _, op := range unknownEnqueues {
			part = append(part, copyFor(op, id))
		}
		windows++
	case len(unknownEnqueues) > 0:
		part = append(part, copyFor(unknownEnqueues[0], id))
		windows++
	}
	part = p.claimCopies(id, part, windows, doneBy)
	for _, op := range p.unnamed[spreadEvery] {
		part = append(part, copyFor(op, id))
	}
	for _, op := range p.unnamed[spreadNoneFree] {
		if !p.everyCopy && ((enqueuedAt >= 0 && enqueuedAt > op.Return) || (doneBy >= 0 && doneBy < op.Call)) {
			continue
		}
		part = append(part, copyFor(op, id))
	}
	return part
}

// claimCopies adds the unknown claims that may have claimed job id: as many as can take effect
// in its windows of eligibility, the earliest called, and every one whose own lease lapses.
func (p *partitioner) claimCopies(id int64, part []porcupine.Operation, windows int, doneBy int64) []porcupine.Operation {
	if p.everyCopy {
		windows = len(p.unnamed[spreadAnyJob])
	}
	windows += p.lapsingCopies
	type class struct {
		lease  time.Duration
		worker string
	}
	kept := map[class]int{}
	for _, op := range p.unnamed[spreadAnyJob] {
		if !p.everyCopy && doneBy >= 0 && op.Call > doneBy {
			break // called once the job was done, which is terminal: it cannot claim it
		}
		in := op.Input.(Input)
		c := class{lease: in.Lease}
		if p.byWorker {
			c.worker = in.Worker
		}
		if !p.lapses(in) && kept[c] >= windows {
			continue
		}
		part = append(part, copyFor(op, id))
		kept[c]++
	}
	return part
}

func copyFor(op porcupine.Operation, job int64) porcupine.Operation {
	in := op.Input.(Input)
	in.Job = job
	op.Input = in
	return op
}

// Porcupine returns the porcupine model of a queue of the seed's shape.
func Porcupine() porcupine.Model { return Shape{}.Porcupine() }

// Porcupine returns the porcupine model of the queue: per-job state, partitioned by job.
func (sh Shape) Porcupine() porcupine.Model {
	return porcupine.Model{
		Partition: sh.PartitionByJob,
		Init:      func() any { return JobState{} },
		Step: func(state, input, output any) (bool, any) {
			next, v := sh.StepJob(state.(JobState), input.(Input), output.(Output))
			return v == nil, next
		},
		Equal:             func(a, b any) bool { return a.(JobState) == b.(JobState) },
		Hash:              func(state any) uint64 { return state.(JobState).hash() },
		DescribeOperation: func(input, output any) string { return DescribeOp(input.(Input), output.(Output)) },
		DescribeState:     func(state any) string { return state.(JobState).String() },
		DescribeOperationMetadata: func(info any) string {
			if info == nil {
				return ""
			}
			return fmt.Sprint(info)
		},
	}
}

// hash is a hash of every field Equal compares (but the windows' ends, which the starts
// nearly always decide), for porcupine's cache of states seen.
func (s JobState) hash() uint64 {
	h := fnv.New64a()
	var b [8 * 9]byte
	for i, v := range []int64{s.Gen, int64(s.Until.From), int64(s.Until.To), int64(s.Lease), int64(s.Claimed.From),
		int64(s.Due.From), int64(s.Due.To), s.Attempts, s.Effects} {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	h.Write(b[:])
	flags := byte(0)
	for i, f := range []bool{s.Exists, s.Renewed, s.Failed, s.Locked} {
		if f {
			flags |= 1 << i
		}
	}
	h.Write([]byte{flags, 0})
	h.Write([]byte(s.State))
	h.Write([]byte{0})
	h.Write([]byte(s.Kept))
	h.Write([]byte{0})
	h.Write([]byte(s.Owner))
	return h.Sum64()
}

// DescribeOp prints an operation and its answer, as timelines and reports show it.
func DescribeOp(in Input, out Output) string {
	call, answer := specOf(in.Kind).describe(in, out)
	switch out.Outcome {
	case Unknown:
		if answer != "" {
			answer += ", "
		}
		answer += "outcome unknown"
	case NotSent:
		answer = "not sent"
	case Aborted:
		if answer != "" {
			answer += ", "
		}
		answer += "rolled back"
	}
	if out.Err != "" {
		answer += " (" + strings.TrimSpace(out.Err) + ")"
	}
	return call + " -> " + answer
}
