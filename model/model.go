// Package model is the queue's sequential specification: what a correct queue answers to each
// operation, given the database time at which it runs. It does no I/O; the harness feeds it the
// real queue's answers and it says whether they were legal and which promise they broke.
package model

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// State is a job's lifecycle state, spelled as the seed's state column spells it.
type State string

const (
	Ready   State = "ready"
	Running State = "running"
	Done    State = "done"
)

// ends are the states a job never leaves, each with the property that an operation taking a
// job out of it breaks: done and dead (Lifecycle), and those an operation of the queue's own
// brings, which register themselves beside it (end).
var ends = map[State]Property{Done: PDoneOnce, Dead: PRetries}

// end registers a terminal state and the property leaving it breaks.
func end(s State, p Property) State {
	ends[s] = p
	return s
}

// Terminal reports whether a job in state s stays there.
func (s State) Terminal() bool {
	_, ok := ends[s]
	return ok
}

// left is the violation of an operation that changed or took a job in a terminal state: the
// words say what it did (took, changed 1 row), the violation why it may not.
func left(s State, format string, args ...any) *Violation {
	return Violate(ends[s], format+", but the job is %s (%s is terminal)", append(args, s, s)...)
}

// Order is what a queue promises about which eligible job a claim returns.
type Order string

const (
	// LowestID: the lowest-id eligible, unlocked job (the seed's ORDER BY id).
	LowestID Order = "lowest-id"
	// Any: any eligible, unlocked job (queues ordered by priority, schedule or lease expiry).
	Any Order = "any"
)

// ExpireBy is how far into the past the expire hook moves a lease, as the seed's test hook does.
const ExpireBy = time.Second

// Queue is the sequential specification's whole state: every job's state, and what spans
// jobs. Times are database times, as offsets from an origin the harness chose; only
// comparisons between them matter. Each job operation is the step the concurrent model takes
// too (spec.step, with its words); the queue adds what only a whole queue, seen one statement
// at a time, can judge: the order claims take jobs in, what a claim or a rescue passed over,
// a snapshot's rows as a whole, and what a drain accounts for.
type Queue struct {
	Order Order
	Shape Shape
	// Draining: the harness is draining the queue, expiring every lease and claiming until
	// none; a job it finds eligible and cannot take is then, where the queue has a lifecycle,
	// one the drain cannot account for (property 15).
	Draining bool
	jobs     map[int64]*JobState
	ids      []int64 // ascending
	// completions counts accepted completions per job (property 4 wants at most one).
	completions map[int64]int
}

// New returns an empty queue that promises the given claim order.
func New(order Order) *Queue {
	if order == "" {
		order = LowestID
	}
	return &Queue{Order: order, jobs: map[int64]*JobState{}, completions: map[int64]int{}}
}

// Clone returns an independent copy, for callers that explore what-ifs.
func (q *Queue) Clone() *Queue {
	c := New(q.Order)
	c.Shape, c.Draining = q.Shape, q.Draining
	for _, id := range q.ids {
		j := *q.jobs[id]
		c.jobs[id] = &j
		c.ids = append(c.ids, id)
	}
	for id, n := range q.completions {
		c.completions[id] = n
	}
	return c
}

// Jobs returns a copy of every job, ordered by id.
func (q *Queue) Jobs() []Job {
	out := make([]Job, 0, len(q.ids))
	for _, id := range q.ids {
		out = append(out, Job{ID: id, JobState: *q.jobs[id]})
	}
	return out
}

// Job returns one job and whether it exists.
func (q *Queue) Job(id int64) (Job, bool) {
	j, ok := q.jobs[id]
	if !ok {
		return Job{}, false
	}
	return Job{ID: id, JobState: *j}, true
}

// Len is the number of enqueued jobs.
func (q *Queue) Len() int { return len(q.ids) }

// step judges one operation on job id by the specification's step, and applies it: the
// state it leads to, sharpened by what the answer taught (spec.learn). A violation leaves the
// job as it was, unless the queue does not promise what it broke (NotPromised): then the job
// is what the answer made of it, and the run goes on.
func (q *Queue) step(id int64, in Input, out Output) *Violation {
	sp := specOf(in.Kind)
	s := q.state(id)
	next, v := sp.step(q.Shape, s, in, out)
	if v != nil && !v.NotPromised {
		return v
	}
	q.set(id, sp.learn(q.Shape, next, in, out))
	return v
}

// state is job id's state (the zero state where it was never enqueued).
func (q *Queue) state(id int64) JobState {
	if j, ok := q.jobs[id]; ok {
		return *j
	}
	return JobState{}
}

// set stores job id's state; a job that was never enqueued stays so.
func (q *Queue) set(id int64, s JobState) {
	if j, ok := q.jobs[id]; ok {
		*j = s
	}
}

// errOf is a step's violation as an error (nil when there is none).
func errOf(v *Violation) error {
	if v == nil {
		return nil
	}
	return v
}

// Property is one of the promises of the design reference, by its number. A finding carries it
// as a value from the moment it is detected to the moment it is printed, so nothing downstream
// reads a property back out of text.
type Property int

// The properties, numbered as in the design reference.
const (
	PClaimOrder   Property = 0 // the sequential claim-order promise declared in queue.json
	PFencing      Property = 1
	PExclusion    Property = 2
	PGenerations  Property = 3
	PDoneOnce     Property = 4
	PSkipLocked   Property = 5
	PRecovery     Property = 6
	PLinearizable Property = 7
	PDBTime       Property = 8
	PNoErrors     Property = 9
	PClaimCost    Property = 10 // a measurement (plan/), reported rather than judged on time
	// The job lifecycle's (Lifecycle), judged where the queue ships what they speak of.
	PWriteFencing Property = 11 // a fail or renew by a stale or expired owner changes nothing
	PRetries      Property = 12 // attempts never exceed the limit, dead is terminal, no failure is lost
	PRenewal      Property = 13 // a renewal never revives a lapsed lease, and the owner's live one is extended
	PScheduling   Property = 14 // no job is claimed before its run-at time or before its backoff ends
	PDrain        Property = 15 // a drain leaves every enqueued job done or dead, none lost, none twice
	PEffects      Property = 16 // the business table holds one effect per committed completion, none else
	// Judged where workers call an external destination with the job's effect (effectdest).
	PExternal Property = 17 // a fencing destination holds one effect per job, exactly one for a done job
)

// Properties lists every property in order.
var Properties []Property

// properties is what the suite knows of each property: its short name, and whether sequential
// programs and concurrent histories judge it. A property an operation of its own brings
// registers itself beside it (property).
var properties = map[Property]propertyInfo{}

type propertyInfo struct {
	name                   string
	sequential, concurrent bool
	// needs is what the queue must ship for the property to be judged on it (nil: nothing), and
	// lacks says so where it does not; tally is the count (Facts.Tally) of what exercises it.
	needs        func(Can) bool
	lacks, tally string
}

// property registers property p: its short name, and which runs judge it.
func property(p Property, name string, sequential, concurrent bool) Property {
	properties[p] = propertyInfo{name: name, sequential: sequential, concurrent: concurrent}
	Properties = append(Properties, p)
	slices.Sort(Properties)
	return p
}

func init() {
	for _, p := range []struct {
		p                      Property
		name                   string
		sequential, concurrent bool
	}{
		{PClaimOrder, "claim order", true, false},
		{PFencing, "fencing", true, true},
		{PExclusion, "mutual exclusion", true, true},
		{PGenerations, "generations", true, true},
		{PDoneOnce, "done at most once", true, true},
		{PSkipLocked, "skip, don't wait", true, true},
		{PRecovery, "recovery", true, true},
		{PLinearizable, "linearizability", false, true},
		{PDBTime, "database time", true, true},
		{PNoErrors, "no unexpected errors", true, true},
		{PClaimCost, "claim cost", false, false},
		{PWriteFencing, "write fencing", true, true},
		{PRetries, "retries", true, true},
		{PRenewal, "renewal", true, true},
		{PScheduling, "scheduling", true, true},
		{PDrain, "drain accounting", true, false},
		{PEffects, "effects", true, true},
		{PExternal, "external effects", false, false},
	} {
		property(p.p, p.name, p.sequential, p.concurrent)
	}
}

// judgedWhere registers what the queue must ship for property p to be judged (lacks: the
// words for a queue that does not), and the count of what exercises it (Facts.Tally).
func judgedWhere(p Property, needs func(Can) bool, lacks, tally string) Property {
	i := properties[p]
	i.needs, i.lacks, i.tally = needs, lacks, tally
	properties[p] = i
	return p
}

// Tally is the count (Facts.Tally) of the operations that give property p something to
// check, where an operation of its own registered one ("" for the others).
func (p Property) Tally() string { return properties[p].tally }

// JudgedBy lists, in order, the properties sequential programs judge (sequential) or
// concurrent histories do; claim cost is a measurement, and external effects are judged
// where a run calls a destination.
func JudgedBy(sequential bool) []Property {
	var out []Property
	for _, p := range Properties {
		if i := properties[p]; sequential && i.sequential || !sequential && i.concurrent {
			out = append(out, p)
		}
	}
	return out
}

// Name is the property's short name.
func (p Property) Name() string { return properties[p].name }

// String is "property N (name)", the way every verdict starts.
func (p Property) String() string { return fmt.Sprintf("property %d (%s)", int(p), p.Name()) }

// PropertyName returns the short name of a numbered property.
func PropertyName(p Property) string { return p.Name() }

// Violation is a broken promise: which property of the specification and what happened.
type Violation struct {
	Property Property `json:"Property"`
	Name     string   `json:"Name"` // the property's short name, kept for readers of saved histories
	Detail   string   `json:"Detail"`
	// NotPromised: the queue declares that it does not make this promise. The model applied the
	// queue's answer; the finding is measured and reported, and fails nothing.
	NotPromised bool `json:"NotPromised,omitempty"`
}

func (v *Violation) Error() string {
	if v.NotPromised {
		return v.Property.String() + ", not promised: " + v.Detail
	}
	return v.Property.String() + ": " + v.Detail
}

// Violate builds a Violation for property p.
func Violate(p Property, format string, args ...any) *Violation {
	return &Violation{Property: p, Name: p.Name(), Detail: fmt.Sprintf(format, args...)}
}

// Enqueue records a job the queue created with the given id. Ids must be new and ascending:
// the specification (and lowest-id order) relies on ids increasing with enqueue order.
func (q *Queue) Enqueue(id int64) error { return q.EnqueueAt(id, Window{}, 0) }

// EnqueueAt records a job the queue created, by an enqueue that ran in window at, to become
// due delay after it (0: due at once).
func (q *Queue) EnqueueAt(id int64, at Window, delay time.Duration) error {
	if n := len(q.ids); n > 0 && id < q.ids[n-1] && q.jobs[id] == nil {
		return Violate(PClaimOrder, "enqueue returned id %d after id %d: ids must ascend", id, q.ids[n-1])
	}
	next, v := specOf(OpEnqueue).step(q.Shape, q.state(id), Input{Kind: OpEnqueue, At: at, Delay: delay}, Output{Job: id})
	if v != nil {
		return v
	}
	q.jobs[id] = &next
	q.ids = append(q.ids, id)
	return nil
}

// Claimable returns the jobs a claim in window at must be able to return, certainly eligible
// and unlocked, in id order (for LowestID only the first is legal).
func (q *Queue) Claimable(at Window) []int64 {
	var out []int64
	for _, id := range q.ids {
		if j := q.jobs[id]; q.Shape.claimable(j.State, j.Until, j.Due, j.Attempts, at, true) == Live && !j.Locked {
			out = append(out, id)
		}
	}
	return out
}

// Claim checks a claim's answer (ok=false: no row) in window at with lease length lease, and
// applies it. It returns a Violation when the answer is not one the specification allows. A
// job whose lease may end inside the window may be taken or skipped; either answer narrows
// where its end lies.
func (q *Queue) Claim(at Window, lease time.Duration, ok bool, id, gen int64) error {
	return q.ClaimFor(at, lease, ok, id, gen, "")
}

// ClaimFor is Claim by the named worker, whose lease it becomes where leases are the worker's.
// The job it returned takes the claim's step; the queue judges the rest: that no certainly
// eligible job was left unclaimed, that the job was the lowest eligible one where the queue
// promises so, and, where the suite numbers claims itself, that the number is new.
func (q *Queue) ClaimFor(at Window, lease time.Duration, ok bool, id, gen int64, worker string) error {
	claimable := q.Claimable(at)
	if !ok {
		if len(claimable) > 0 {
			return q.lost(at, claimable[0])
		}
		q.skipped(at, func(JobState, int64) bool { return true })
		return nil
	}
	in := Input{Kind: OpClaim, At: at, Lease: lease, Worker: worker}
	before := q.state(id)
	next, v := specOf(OpClaim).step(q.Shape, before, in, Output{Found: true, Job: id, Gen: gen})
	switch {
	case v != nil:
		return v
	case q.Shape.NoGeneration && gen <= before.Gen:
		// The suite numbers the claims of a queue without generations in the order their
		// answers came back, which in a sequential run is the order they ran in.
		return Violate(PExclusion, "claim of job %d is the suite's claim number %d, but claim %d was seen before it", id, gen, before.Gen)
	case q.Order == LowestID && len(claimable) > 0 && claimable[0] < id:
		return Violate(PClaimOrder, "claim returned job %d, but job %d is the lowest eligible unlocked id", id, claimable[0])
	case q.Order == LowestID:
		// Every lower job it passed over was not eligible when the claim looked at it.
		q.skipped(at, func(_ JobState, o int64) bool { return o < id })
	}
	q.set(id, next)
	return nil
}

// lost is the verdict on a claim in window at that returned nothing while job id was certainly
// eligible: a job no claim takes is lost, one that a failure made ready again is a failure
// lost, and one a drain cannot take is a drain that cannot account for every job.
func (q *Queue) lost(at Window, id int64) *Violation {
	j := q.jobs[id]
	if q.Draining && q.Shape.Can.Fail {
		return Violate(PDrain, "the drain's claim at %s returned no job, but job %d is eligible and unlocked (%s%s): the drain cannot account for it", at, id, describe(*j), q.Shape.since(*j))
	}
	if j.Failed && j.State == Ready {
		return Violate(PRetries, "claim at %s returned no job, but job %d failed and is due again since %s (%d attempts, kept %q): the failure lost the job", at, id, Stamp(j.Due.To), j.Attempts, j.Kept)
	}
	return Violate(PRecovery, "claim at %s returned no job, but job %d is eligible and unlocked (%s)", at, id, describe(*j))
}

// skipped narrows what a claim in window at passed over: a running job's lease was not yet over
// when the claim looked at it, so it ends no earlier than the window's start (a queue whose
// claims leave expired jobs to its rescue step tells nothing by passing one over); a ready job
// was not yet due, so it becomes due no earlier than the window's start.
func (q *Queue) skipped(at Window, which func(JobState, int64) bool) {
	for _, id := range q.ids {
		j := q.jobs[id]
		switch {
		case j.Locked || !which(*j, id):
		case j.State == Running && !q.Shape.RescueOnly && j.LeaseAt(at) == Uncertain:
			j.Until = j.Until.NotBefore(at.From)
		case j.State == Ready && dueAt(j.Due, at) == Uncertain:
			j.Due = j.Due.NotBefore(at.From)
		}
	}
}

// CompleteWouldSucceed is the specification of complete(id, gen) in window at: Live when it
// must succeed, Over when it must change nothing, Uncertain when the lease may end inside at.
func (q *Queue) CompleteWouldSucceed(at Window, id, gen int64) Liveness {
	return q.state(id).completable(gen, at)
}

// Complete checks the number of rows a complete(id, gen) in window at reported, and applies it.
func (q *Queue) Complete(at Window, id, gen, rows int64) error {
	v := q.step(id, Input{Kind: OpComplete, Job: id, Gen: gen, At: at}, Output{Rows: rows})
	if rows == 1 && (v == nil || v.NotPromised) {
		q.completions[id]++
	}
	return errOf(v)
}

// Expire applies the test hook that moves a job's lease into the past, run in window at.
func (q *Queue) Expire(at Window, id int64) {
	q.step(id, Input{Kind: OpExpire, Job: id, At: at}, Output{})
}

// Rescue checks what the queue's rescue step, run in window at, answered (the jobs it took) and
// applies it: each job it took takes the rescue's step, and every running job it left alone
// that no row lock holds is judged as left (a lease certainly over must have been taken, where
// claims leave expired jobs alone nothing else reclaims it). A job it takes becomes ready, or,
// with a lifecycle, what the lapse makes it (Lifecycle.lapsed): dead once a counted lapse used
// its last attempt, or due only after its backoff.
func (q *Queue) Rescue(at Window, ids []int64) error {
	in := Input{Kind: OpRescue, At: at}
	took := map[int64]JobState{}
	for _, id := range ids {
		if _, twice := took[id]; twice {
			return Violate(PRecovery, "rescue returned job %d twice", id)
		}
		next, v := specOf(OpRescue).step(q.Shape, q.state(id), in, Output{Found: true, Job: id})
		if v != nil {
			return v
		}
		took[id] = next
	}
	for _, id := range q.ids {
		if next, ok := took[id]; ok {
			q.set(id, next)
			continue
		}
		in.Job = id
		if v := q.step(id, in, Output{}); v != nil {
			return v
		}
	}
	return nil
}

// Lock and Unlock record another session taking and releasing a row lock on a job.
func (q *Queue) Lock(id int64)   { q.step(id, Input{Kind: OpLock, Job: id}, Output{}) }
func (q *Queue) Unlock(id int64) { q.step(id, Input{Kind: OpUnlock, Job: id}, Output{}) }

// Completions is the number of accepted completions of a job.
func (q *Queue) Completions(id int64) int { return q.completions[id] }

// Row is a job as the queue's snapshot reports it. LeaseLive matters only for running jobs;
// Attempts and Kept (the error text its last failure kept) only where the queue has a lifecycle.
type Row struct {
	ID         int64
	State      State
	Generation int64
	LeaseLive  bool
	Attempts   int64
	Kept       string
}

func (r Row) String() string {
	s := fmt.Sprintf("%d:%s/g%d", r.ID, r.State, r.Generation)
	if r.State == Running {
		if r.LeaseLive {
			s += "/live"
		} else {
			s += "/expired"
		}
	}
	if r.Attempts > 0 {
		s += fmt.Sprintf("/a%d", r.Attempts)
	}
	if r.Kept != "" {
		s += fmt.Sprintf("/%q", r.Kept)
	}
	return s
}

// String is the specification's state, one job after another, each running one with where
// its lease ends.
func (q *Queue) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range q.ids {
		j := q.jobs[id]
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%s/g%d", id, j.State, j.Gen)
		if j.Attempts > 0 {
			fmt.Fprintf(&b, "/a%d", j.Attempts)
		}
		switch {
		case j.State == Running:
			fmt.Fprintf(&b, "/ends %s", j.Until)
		case j.State == Ready && j.Due != Window{}:
			fmt.Fprintf(&b, "/due %s", j.Due)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// CheckSnapshot compares a queue's snapshot, read in window at, with the specification. The
// first difference is reported as a violation of the property it breaks. Each job's row takes
// the observation's step; the queue judges what spans rows: their order, and rows of jobs it
// does not know.
func (q *Queue) CheckSnapshot(at Window, got []Row) error {
	if !sort.SliceIsSorted(got, func(a, b int) bool { return got[a].ID < got[b].ID }) {
		return Violate(PRecovery, "snapshot is not ordered by id: %v", got)
	}
	gi := map[int64]Row{}
	for _, r := range got {
		gi[r.ID] = r
	}
	present := 0
	for _, id := range q.ids {
		g, ok := gi[id]
		out := Output{Found: ok}
		if ok {
			out.State, out.Gen, out.Live, out.Attempts, out.Kept = g.State, g.Generation, g.LeaseLive, g.Attempts, g.Kept
		}
		if !q.Shape.Deletes(q.jobs[id].State) {
			present++
		}
		if v := q.step(id, Input{Kind: OpObserve, Job: id, At: at}, out); v != nil {
			return v
		}
	}
	if len(got) != present {
		for _, r := range got {
			if _, ok := q.jobs[r.ID]; !ok {
				return Violate(PRecovery, "the queue holds job %d, which was never enqueued", r.ID)
			}
		}
		return Violate(PRecovery, "the queue holds %d rows, the specification %d", len(got), present)
	}
	return nil
}

func describe(j JobState) string {
	if j.State == Running {
		return fmt.Sprintf("running, generation %d, lease certainly over: %s", j.Gen, j.lease())
	}
	return string(j.State)
}
