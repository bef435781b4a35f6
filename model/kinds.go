package model

import "fmt"

// spec is what the concurrent specification knows of one kind of operation: which job it
// speaks of, what it does to that job's state, how a partition treats it, and how it reads.
// Each kind of OpKind is one type below, found through specs; an operation of a kind the
// table lacks constrains nothing.
type spec interface {
	// facts is what the operation, answered as out, says of the job it names (see Facts).
	facts(in Input, out Output) Facts
	// step is the job's state after the operation, or the violation that makes the operation
	// impossible in state s. An unknown outcome never violates: it takes effect when it can,
	// and "did not take effect" is the same as taking effect after every other operation,
	// which its return time of +infinity allows.
	//
	// The words of every violation are written here, once: the sequential model (Queue) asks
	// the same step for each job operation and keeps only what spans jobs (claim order, what a
	// claim passed over, a snapshot's rows as a whole). A violation marked NotPromised is one
	// the queue declares it does not promise: the step returns the state the answer made, and
	// both models go on from it.
	step(sh Shape, s JobState, in Input, out Output) (JobState, *Violation)
	// learn is what an answer the step accepted teaches of where the job's lease ends, when
	// the answer was legal either way: a refused completion saw the lease over, a snapshot saw
	// it live or not. The sequential model learns it, so that its next verdicts are as sharp
	// as the clock readings allow; the concurrent model does not, which keeps porcupine's
	// states few, and a wider window only makes more answers legal.
	learn(sh Shape, s JobState, in Input, out Output) JobState
	// ignored: the operation constrains no job at all, so partitions leave it out.
	ignored(in Input, out Output) bool
	// spread is how a partition places an operation that names no job (see Shape.PartitionByJob).
	spread(in Input, out Output) spread
	// opens: the operation may make its job eligible again within the history (lapses says
	// whether a claim's own lease ends before the history does).
	opens(in Input, out Output, lapses func(Input) bool) bool
	// describe is the call and its answer in words, before the outcome is added.
	describe(in Input, out Output) (call, answer string)
}

// spread is how a partition copies an operation that names no job.
type spread int

const (
	spreadNone     spread = iota // it names its job, or constrains nothing
	spreadAnyJob                 // an unknown claim: it may have claimed any one job
	spreadNewJob                 // an unknown enqueue: it may have created a job no returned enqueue did
	spreadEvery                  // an unknown rescue or heartbeat: it may have acted on any job
	spreadNoneFree               // a strict empty claim: no job was eligible at one instant
)

var specs = map[OpKind]spec{
	OpEnqueue:  enqueueSpec{},
	OpClaim:    claimSpec{},
	OpComplete: completeSpec{},
	OpExpire:   expireSpec{},
	OpObserve:  observeSpec{},
	OpLock:     lockSpec{},
	OpUnlock:   lockSpec{},
	OpRescue:   rescueSpec{},
	OpFail:     failSpec{},
	OpRenew:    renewSpec{},
	OpEffect:   effectSpec{},
	OpEffects:  effectsSpec{},
}

// specOf is the specification of an operation's kind; an unknown kind constrains nothing.
func specOf(k OpKind) spec {
	if s, ok := specs[k]; ok {
		return s
	}
	return unknownSpec{}
}

// named gives a kind the defaults of an operation that names its job in its input: it
// constrains that job, spreads nowhere, opens no window, creates and finishes nothing.
type named struct{}

func (named) facts(in Input, _ Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: string(in.Kind)}
}
func (named) ignored(Input, Output) bool                                         { return false }
func (named) spread(Input, Output) spread                                        { return spreadNone }
func (named) opens(Input, Output, func(Input) bool) bool                         { return false }
func (named) step(_ Shape, s JobState, _ Input, _ Output) (JobState, *Violation) { return s, nil }
func (named) learn(_ Shape, s JobState, _ Input, _ Output) JobState              { return s }

type unknownSpec struct{ named }

func (unknownSpec) facts(in Input, _ Output) Facts               { return Facts{Statement: string(in.Kind)} }
func (unknownSpec) describe(in Input, _ Output) (string, string) { return string(in.Kind), "" }

type enqueueSpec struct{ named }

func (enqueueSpec) facts(in Input, out Output) Facts {
	return Facts{Job: out.Job, Named: out.Outcome == Returned && out.Job != 0, Statement: "enqueue", Creates: true, Later: in.Delay > 0}
}
func (enqueueSpec) spread(_ Input, out Output) spread {
	if out.Outcome == Unknown {
		return spreadNewJob
	}
	return spreadNone
}
func (enqueueSpec) opens(Input, Output, func(Input) bool) bool { return true }
func (enqueueSpec) step(_ Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	if s.Exists {
		if out.Outcome == Unknown {
			return s, nil
		}
		return s, Violate(PRecovery, "enqueue returned id %d, which already exists", out.Job)
	}
	n := JobState{Exists: true, State: Ready}
	if in.Delay > 0 {
		n.Due = in.At.Shift(in.Delay)
	}
	return n, nil
}
func (enqueueSpec) describe(in Input, out Output) (string, string) {
	call := "enqueue"
	if in.Delay > 0 {
		call = fmt.Sprintf("enqueue (due in %v)", in.Delay)
	}
	if out.Outcome == Returned {
		return call, fmt.Sprintf("job %d", out.Job)
	}
	return call, ""
}

type claimSpec struct{ named }

func (claimSpec) facts(in Input, out Output) Facts {
	return Facts{Job: out.Job, Named: out.Found, Statement: "claim", Gen: out.Gen, Lease: in.Lease, Writes: out.Found,
		Claims: true, Took: out.Found}
}

// ignored: a non-strict empty claim is always legal under the relaxation, so it can be
// linearized anywhere.
func (claimSpec) ignored(in Input, out Output) bool {
	return out.Outcome == Returned && !out.Found && !in.Strict
}
func (claimSpec) spread(in Input, out Output) spread {
	switch {
	case out.Outcome == Unknown && !out.Found:
		return spreadAnyJob
	case in.Strict && !out.Found:
		return spreadNoneFree
	}
	return spreadNone
}
func (claimSpec) opens(in Input, _ Output, lapses func(Input) bool) bool { return lapses(in) }

// step: a claim that returned job id (or, its answer lost, may have). An empty claim is the
// concurrent model's only (the sequential one judges it against every job at once): a strict
// one says no job was eligible.
func (claimSpec) step(sh Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	id := out.Job
	if !out.Found {
		id = in.Job
	}
	switch {
	case out.Outcome == Unknown && !out.Found: // may have claimed this job, or another, or nothing
		if sh.eligible(s, in.At) != Over {
			// On a queue of tokens too: the token it holds was never seen, so no owner's matches.
			return sh.claimed(s, s.Gen+1, in), nil
		}
		return s, nil
	case out.Outcome == Unknown: // a committed-or-not claim whose answer is known
		if sh.eligible(s, in.At) != Over && (out.Gen == s.Gen+1 || sh.NoGeneration) {
			return sh.claimed(s, out.Gen, in), nil
		}
		return s, nil
	case !out.Found:
		if in.Strict && s.Exists && sh.claimable(s.State, s.Until, s.Due, s.Attempts, in.At, true) == Live {
			return s, Violate(PRecovery, "claim returned no job, but job %d was eligible (%s) and no other session could hold it", id, s)
		}
		return s, nil
	}
	if v := sh.claimRefused(s, in, out); v != nil {
		return s, v
	}
	return sh.claimed(s, out.Gen, in), nil
}

// claimRefused is the promise a claim in window in.At broke by returning the job s as
// generation out.Gen, or nil.
func (sh Shape) claimRefused(s JobState, in Input, out Output) *Violation {
	id, lc := out.Job, sh.Life
	switch {
	case !s.Exists:
		return Violate(PRecovery, "claim returned job %d, which was never enqueued", id)
	case s.State.Terminal():
		return left(s.State, "claim returned job %d", id)
	case s.State == Running && s.LeaseAt(in.At) == Live:
		return Violate(PExclusion, "claim at %s returned job %d (generation %d), whose generation %d still held a lease that was certainly live: %s", in.At, id, out.Gen, s.Gen, s.lease())
	case s.Locked:
		return Violate(PSkipLocked, "claim returned job %d, which another session holds row-locked", id)
	case s.State == Ready && dueAt(s.Due, in.At) == Over:
		return Violate(PScheduling, "claim at %s returned job %d, which is not due before %s (%s)", in.At, id, Stamp(s.Due.From), s.dueWhy())
	case lc.AttemptsAtClaim && lc.exhausted(s.Attempts):
		return Violate(PRetries, "claim returned job %d for attempt %d; the queue allows %d", id, s.Attempts+1, lc.MaxAttempts)
	case out.Gen != s.Gen+1 && !sh.NoGeneration:
		return Violate(PGenerations, "claim of job %d returned generation %d; the previous generation was %d, so it must be %d", id, out.Gen, s.Gen, s.Gen+1)
	}
	return nil
}

func (claimSpec) describe(in Input, out Output) (string, string) {
	call, answer := "claim", ""
	if in.Strict {
		call = "claim (strict)"
	}
	switch {
	case out.Found:
		answer = fmt.Sprintf("job %d gen %d", out.Job, out.Gen)
	case out.Outcome == Returned:
		answer = "none"
	}
	if !out.Found && in.Job != 0 {
		call += fmt.Sprintf(" [as seen by job %d]", in.Job)
	}
	return call, answer
}

type completeSpec struct{ named }

func (completeSpec) facts(in Input, out Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: "complete", Gen: in.Gen, Writes: true, Ends: true, Accepted: out.Rows == 1}
}

func (completeSpec) step(sh Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	id, g := in.Job, in.Gen
	would := s.completable(g, in.At)
	done := s.leaseless()
	done.State = Done
	if out.Outcome == Unknown {
		// A queue that does not fence may have accepted it whatever its token.
		if would != Over || sh.Unfenced && s.Exists && !s.State.Terminal() {
			return done, nil
		}
		return s, nil
	}
	switch {
	case out.Rows != 0 && out.Rows != 1:
		return s, Violate(PFencing, "complete(%d, gen %d) reported %d rows; a completion changes 0 or 1", id, g, out.Rows)
	case would == Live && out.Rows == 0:
		return s, Violate(PFencing, "complete(%d, gen %d) at %s by the current owner changed 0 rows, though its lease was certainly live: %s", id, g, in.At, s.lease())
	case would != Over && out.Rows == 1:
		return done, nil
	case out.Rows == 0:
		return s, nil
	}
	v := staleCompletion(s, in)
	if v.Property == PFencing && !sh.Promised(PFencing) && s.Exists {
		// Not promised: the job is done now, as the queue says, and the run goes on.
		v.NotPromised = true
		return done, v
	}
	return s, v
}

// learn: a completion the lease may have outlived, refused, saw it over.
func (completeSpec) learn(_ Shape, s JobState, in Input, out Output) JobState {
	return refusedSawOver(s, in, out)
}

// refusedSawOver: a write presenting generation in.Gen (a completion, failure or renewal) that
// changed nothing, where the lease may have ended inside its window, saw the lease over.
func refusedSawOver(s JobState, in Input, out Output) JobState {
	if out.Outcome == Returned && out.Rows == 0 && s.completable(in.Gen, in.At) == Uncertain {
		s.Until = s.Until.NotAfter(in.At.To)
	}
	return s
}

// staleCompletion is the promise an accepted completion broke, the job being what it was.
func staleCompletion(s JobState, in Input) *Violation {
	id, g := in.Job, in.Gen
	switch {
	case !s.Exists:
		return Violate(PFencing, "complete(%d, gen %d) changed 1 row, but job %d was never enqueued", id, g, id)
	case s.State.Terminal():
		return left(s.State, "complete(%d, gen %d) changed 1 row", id, g)
	case s.State != Running:
		return Violate(PFencing, "complete(%d, gen %d) changed 1 row, but the job is %s, not running", id, g, s.State)
	case s.Gen != g:
		return Violate(PFencing, "complete(%d, gen %d) changed 1 row, but the current generation is %d: a stale generation completed the job", id, g, s.Gen)
	}
	return Violate(PFencing, "complete(%d, gen %d) at %s changed 1 row, but its lease was certainly over: %s", id, g, in.At, s.lease())
}

func (completeSpec) describe(in Input, out Output) (string, string) {
	call, answer := fmt.Sprintf("complete(%d, gen %d)", in.Job, in.Gen), ""
	if out.Outcome == Returned {
		answer = fmt.Sprintf("%d row", out.Rows)
		if out.Rows != 1 {
			answer += "s"
		}
	}
	return call, answer
}

type expireSpec struct{ named }

func (expireSpec) facts(in Input, _ Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: "expire", Gen: in.Gen, Writes: true, Expires: true}
}

func (expireSpec) opens(Input, Output, func(Input) bool) bool { return true }

func (expireSpec) step(sh Shape, s JobState, in Input, _ Output) (JobState, *Violation) {
	if in.Gen != 0 && in.Gen != s.Gen {
		return s, nil // the end of a generation's transaction, which no longer holds the job
	}
	if s.State == Running && sh.TxBound {
		// The lease was the claim's transaction, now aborted: the job is as it was before.
		s = s.leaseless()
		s.State = Ready
		return s, nil
	}
	if s.State == Running {
		s.Until, s.Lease = in.At.Shift(-ExpireBy), 0
		if in.At.To == Never { // may have run at any time after its call
			s.Until.To = Never
		}
	}
	return s, nil
}

func (expireSpec) describe(in Input, out Output) (string, string) {
	call, answer := fmt.Sprintf("expire(%d)", in.Job), ""
	if in.Gen != 0 {
		call = fmt.Sprintf("expire(%d, gen %d)", in.Job, in.Gen)
	}
	if out.Outcome == Returned {
		answer = "ok"
	}
	return call, answer
}

type observeSpec struct{ named }

func (observeSpec) facts(in Input, _ Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: "snapshot", Observes: true}
}

// step: one job's row as a snapshot reported it (Found: the snapshot holds the job).
func (observeSpec) step(sh Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	id, fails := in.Job, sh.Can.Fail
	switch {
	case s.Exists && sh.Deletes(s.State) && !out.Found:
		return s, nil
	case s.Exists && sh.Deletes(s.State):
		return s, Violate(deletedBack(s.State), "job %d was %s and deleted, but the queue holds it again (%s g%d): a deleted job came back", id, s.State, out.State, out.Gen)
	case s.Exists && !out.Found && (sh.DoneDeleted || sh.DeadDeleted):
		return s, Violate(PRecovery, "job %d is %s, but the queue no longer holds it (lost: only a %s job may vanish)", id, s.State, sh.deletable())
	case s.Exists && !out.Found:
		return s, Violate(PRecovery, "job %d is missing from the queue (lost)", id)
	case out.Found && !s.Exists:
		return s, Violate(PRecovery, "the queue holds job %d, which was never enqueued", id)
	case !s.Exists:
		return s, nil
	case out.State != s.State:
		return s, Violate(stateBroken(s.State, out.State, s.Failed), "job %d is %s in the queue, but the specification says %s%s", id, out.State, s.State, sh.since(s))
	case out.Gen != s.Gen && !sh.NoGeneration:
		return s, Violate(PGenerations, "job %d has generation %d in the queue, but the specification says %d", id, out.Gen, s.Gen)
	case fails && out.Attempts != s.Attempts:
		return s, Violate(s.attemptsBroken(), "job %d has %d attempts in the queue, but the specification says %d%s", id, out.Attempts, s.Attempts, sh.since(s))
	case fails && out.Kept != s.Kept:
		return s, Violate(PRetries, "job %d keeps the error %q in the queue, but its last failure reported %q", id, out.Kept, s.Kept)
	case s.State == Running:
		if l := s.LeaseAt(in.At); l != Uncertain && out.Live != (l == Live) {
			return s, Violate(PDBTime, "job %d's lease is %s in a snapshot at %s, but it was %s: %s", id, liveWord(out.Live), in.At, l, s.lease())
		}
	}
	return s, nil
}

// learn: a running job's row whose lease may have ended inside the snapshot's window says on
// which side of it the end lies.
func (observeSpec) learn(_ Shape, s JobState, in Input, out Output) JobState {
	if s.State != Running || out.Outcome != Returned || !out.Found || s.LeaseAt(in.At) != Uncertain {
		return s
	}
	if out.Live {
		s.Until = s.Until.NotBefore(in.At.From)
	} else {
		s.Until = s.Until.NotAfter(in.At.To)
	}
	return s
}

// stateBroken is the promise a job seen in state got, where the specification says want,
// broke: a dead job's, or one that failed, is the retries'; a done one's, done at most once;
// one in another terminal state, that state's; any other, recovery.
func stateBroken(want, got State, failed bool) Property {
	switch {
	case want == Dead || got == Dead || failed:
		return PRetries
	case want == Done || got == Done:
		return PDoneOnce
	case want.Terminal():
		return ends[want]
	case got.Terminal():
		return ends[got]
	}
	return PRecovery
}

func (observeSpec) describe(in Input, out Output) (string, string) {
	call, answer := fmt.Sprintf("snapshot[job %d]", in.Job), ""
	if out.Outcome == Returned {
		answer = "absent"
		if out.Found {
			answer = fmt.Sprintf("%s g%d", out.State, out.Gen)
			if out.State == Running {
				answer += " " + liveWord(out.Live)
			}
		}
	}
	return call, answer
}

// lockSpec is a locker taking (OpLock) or releasing (OpUnlock) a job's row lock. The
// concurrent model ignores it: what it constrains (a claim must skip a locked row, not wait for
// it) is checked where waits are seen. The sequential model, where nothing runs while a claim
// does, keeps the lock on the job, and a claim or rescue that takes a locked row breaks
// property 5.
type lockSpec struct{ named }

func (lockSpec) ignored(Input, Output) bool { return true }
func (lockSpec) facts(in Input, _ Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: string(in.Kind), Locks: in.Kind == OpLock, Unlocks: in.Kind == OpUnlock}
}
func (lockSpec) step(_ Shape, s JobState, in Input, _ Output) (JobState, *Violation) {
	if s.Exists {
		s.Locked = in.Kind == OpLock
	}
	return s, nil
}
func (lockSpec) describe(in Input, _ Output) (string, string) {
	return fmt.Sprintf("%s(%d)", in.Kind, in.Job), "ok"
}

// rescueSpec is the rescue step taking a job (Found, Job), one operation per job it returned;
// one whose answer was lost may have taken any job whose lease was over. A returned rescue that
// left a running job alone (not Found, Job naming it) is the sequential model's only: it ran
// while no other session could hold the row, so it had to take a lease certainly over.
type rescueSpec struct{ named }

func (rescueSpec) facts(_ Input, out Output) Facts {
	return Facts{Job: out.Job, Named: out.Found, Statement: "rescue", Writes: out.Found, Rescues: out.Found}
}
func (rescueSpec) spread(_ Input, out Output) spread {
	if out.Outcome == Unknown {
		return spreadEvery
	}
	return spreadNone
}

func (rescueSpec) step(sh Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	id := out.Job
	switch {
	case out.Outcome == Unknown:
		if s.State == Running && s.LeaseAt(in.At) != Live {
			return sh.rescued(s, in.At), nil
		}
		return s, nil
	case !out.Found:
		if s.State == Running && !s.Locked && s.LeaseAt(in.At) == Over {
			return s, Violate(PRecovery, "rescue at %s left job %d running, though its lease was certainly over: %s", in.At, in.Job, s.lease())
		}
		return s, nil
	case !s.Exists:
		return s, Violate(PRecovery, "rescue returned job %d, which was never enqueued", id)
	case s.State.Terminal():
		return s, left(s.State, "rescue at %s took job %d", in.At, id)
	case s.State != Running:
		return s, Violate(PRecovery, "rescue returned job %d, which is %s, not running", id, s.State)
	case s.Locked:
		return s, Violate(PSkipLocked, "rescue took job %d, which another session holds row-locked", id)
	case s.LeaseAt(in.At) == Live:
		return s, Violate(PExclusion, "rescue at %s took job %d from generation %d, whose lease was certainly live: %s", in.At, id, s.Gen, s.lease())
	}
	return sh.rescued(s, in.At), nil
}

// learn: a rescue that left a running job alone, where its lease may have ended inside the
// rescue's window, saw it live.
func (rescueSpec) learn(_ Shape, s JobState, in Input, out Output) JobState {
	if out.Outcome == Returned && !out.Found && s.State == Running && !s.Locked && s.LeaseAt(in.At) == Uncertain {
		s.Until = s.Until.NotBefore(in.At.From)
	}
	return s
}

// rescued is the job s after a rescue in window at took it: what its lapse makes of it.
func (sh Shape) rescued(s JobState, at Window) JobState {
	if sh.Life.countsLapse() {
		s.Attempts, s.CountedBy = s.Attempts+1, 0
	}
	s = s.leaseless()
	s.State, s.Due = sh.Life.lapsed(s.Attempts, at)
	return s
}

func (rescueSpec) describe(in Input, out Output) (string, string) {
	call, answer := "rescue", ""
	if out.Found {
		answer = fmt.Sprintf("job %d ready", out.Job)
	} else if in.Job != 0 {
		call += fmt.Sprintf(" [as seen by job %d]", in.Job)
	}
	return call, answer
}

// claimed is the job s after a claim in.At with in.Lease took it as generation gen.
func (sh Shape) claimed(s JobState, gen int64, in Input) JobState {
	if sh.Life.AttemptsAtClaim {
		s.Attempts, s.CountedBy = s.Attempts+1, 0
	}
	s = s.leaseless().leased(in.At, in.Lease)
	s.State, s.Gen, s.Due = Running, gen, Window{}
	if sh.Life.WorkerLease {
		s.Owner = in.Worker
	}
	return s
}
