// Package model is the queue's sequential specification: what a correct queue answers to each
// operation, given the database time at which it runs. It does no I/O; the harness feeds it the
// real queue's answers and it says whether they were legal and which promise they broke.
package model

import (
	"fmt"
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

// Job is one row as the specification sees it. Until is where its lease ends, in database
// time: a claim in window w with lease L ends in w.Shift(L), so the model knows the end only
// as well as the claim's clock readings bracket it. Later answers narrow it (a claim that
// skipped the job saw it live, a refused completion saw it over).
type Job struct {
	ID         int64
	State      State
	Generation int64
	Until      Window
	Lease      time.Duration // the length the last claim asked for
	Claimed    Window        // when the last claim ran (or renewal, where Renewed)
	Locked     bool          // row-locked by another session's open transaction
	// The lifecycle (see Lifecycle): attempts counted so far as the queue counts them; when a
	// ready job becomes due (its run-at time, or the end of its backoff; zero: from the start);
	// the error text its last failure kept; whether it ever failed; the worker whose claim
	// holds its lease; whether a renewal set the lease's end.
	Attempts int64
	Due      Window
	Kept     string
	Failed   bool
	Owner    string
	Renewed  bool
}

// LeaseAt says whether a running job's lease is live at a statement that ran in window at.
func (j Job) LeaseAt(at Window) Liveness { return leaseAt(j.Until, at) }

// lease describes a running job's lease for verdicts: when it was claimed, how long, and
// where its end lies.
func (j Job) lease() string {
	switch {
	case j.Lease == 0:
		return fmt.Sprintf("its lease ends in %s", j.Until)
	case j.Renewed:
		return fmt.Sprintf("renewed at %s for %v, so its lease ends in %s", j.Claimed, j.Lease, j.Until)
	}
	return fmt.Sprintf("claimed at %s with a %v lease, so its lease ends in %s", j.Claimed, j.Lease, j.Until)
}

// Queue is the specification's whole state. Times are database times, as offsets from an
// origin the harness chose; only comparisons between them matter.
type Queue struct {
	Order Order
	Shape Shape
	// Draining: the harness is draining the queue, expiring every lease and claiming until
	// none; a job it finds eligible and cannot take is then, where the queue has a lifecycle,
	// one the drain cannot account for (property 15).
	Draining bool
	jobs     map[int64]*Job
	ids      []int64 // ascending
	// completions counts accepted completions per job (property 4 wants at most one).
	completions map[int64]int
	// effects is the ledger of business effects that committed, per job (property 16).
	effects map[int64]int
}

// New returns an empty queue that promises the given claim order.
func New(order Order) *Queue {
	if order == "" {
		order = LowestID
	}
	return &Queue{Order: order, jobs: map[int64]*Job{}, completions: map[int64]int{}, effects: map[int64]int{}}
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
	for id, n := range q.effects {
		c.effects[id] = n
	}
	return c
}

// Jobs returns a copy of every job, ordered by id.
func (q *Queue) Jobs() []Job {
	out := make([]Job, 0, len(q.ids))
	for _, id := range q.ids {
		out = append(out, *q.jobs[id])
	}
	return out
}

// Job returns one job and whether it exists.
func (q *Queue) Job(id int64) (Job, bool) {
	j, ok := q.jobs[id]
	if !ok {
		return Job{}, false
	}
	return *j, true
}

// Len is the number of enqueued jobs.
func (q *Queue) Len() int { return len(q.ids) }

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
var Properties = []Property{PClaimOrder, PFencing, PExclusion, PGenerations, PDoneOnce, PSkipLocked,
	PRecovery, PLinearizable, PDBTime, PNoErrors, PClaimCost,
	PWriteFencing, PRetries, PRenewal, PScheduling, PDrain, PEffects, PExternal}

var propertyNames = map[Property]string{
	PClaimOrder:   "claim order",
	PFencing:      "fencing",
	PExclusion:    "mutual exclusion",
	PGenerations:  "generations",
	PDoneOnce:     "done at most once",
	PSkipLocked:   "skip, don't wait",
	PRecovery:     "recovery",
	PLinearizable: "linearizability",
	PDBTime:       "database time",
	PNoErrors:     "no unexpected errors",
	PClaimCost:    "claim cost",
	PWriteFencing: "write fencing",
	PRetries:      "retries",
	PRenewal:      "renewal",
	PScheduling:   "scheduling",
	PDrain:        "drain accounting",
	PEffects:      "effects",
	PExternal:     "external effects",
}

// Name is the property's short name.
func (p Property) Name() string { return propertyNames[p] }

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
func (q *Queue) Enqueue(id int64) error { return q.EnqueueAt(id, Window{}) }

// EnqueueAt records a job the queue created to become due in window due: the enqueue's window
// shifted by its run-at delay (the zero window: due at once).
func (q *Queue) EnqueueAt(id int64, due Window) error {
	if _, dup := q.jobs[id]; dup {
		return Violate(PRecovery, "enqueue returned id %d, which already exists", id)
	}
	if n := len(q.ids); n > 0 && id < q.ids[n-1] {
		return Violate(PClaimOrder, "enqueue returned id %d after id %d: ids must ascend", id, q.ids[n-1])
	}
	q.jobs[id] = &Job{ID: id, State: Ready, Due: due}
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
func (q *Queue) ClaimFor(at Window, lease time.Duration, ok bool, id, gen int64, worker string) error {
	claimable := q.Claimable(at)
	if !ok {
		if len(claimable) > 0 {
			return q.lost(at, claimable[0])
		}
		q.skipped(at, func(*Job) bool { return true })
		return nil
	}
	j, exists := q.jobs[id]
	if !exists {
		return Violate(PRecovery, "claim returned job %d, which was never enqueued", id)
	}
	if v := q.claimRefused(at, j); v != nil {
		return v
	}
	if q.Shape.NoGeneration {
		if gen <= j.Generation {
			return Violate(PExclusion, "claim of job %d is the suite's claim number %d, but claim %d was seen before it", id, gen, j.Generation)
		}
	} else if gen != j.Generation+1 {
		return Violate(PGenerations, "claim of job %d returned generation %d; the previous generation was %d, so it must be %d", id, gen, j.Generation, j.Generation+1)
	}
	if q.Order == LowestID {
		if len(claimable) > 0 && claimable[0] < id {
			return Violate(PClaimOrder, "claim returned job %d, but job %d is the lowest eligible unlocked id", id, claimable[0])
		}
		// Every lower job it passed over was not eligible when the claim looked at it.
		q.skipped(at, func(o *Job) bool { return o.ID < id })
	}
	if j.State == Running {
		j.Until = j.Until.NotAfter(at.To)
	}
	if q.Shape.Life.AttemptsAtClaim {
		j.Attempts++
	}
	j.State, j.Generation, j.Until, j.Lease, j.Claimed, j.Renewed = Running, gen, at.Shift(lease), lease, at, false
	j.Due, j.Owner = Window{}, worker
	return nil
}

// claimRefused is the promise a claim in window at broke by returning job j, or nil.
func (q *Queue) claimRefused(at Window, j *Job) *Violation {
	lc := q.Shape.Life
	switch {
	case j.State == Done:
		return Violate(PDoneOnce, "claim returned job %d, which is done (done is terminal)", j.ID)
	case j.State == Dead:
		return Violate(PRetries, "claim returned job %d, which is dead, its attempts at %d (dead is terminal)", j.ID, j.Attempts)
	case j.State == Running && j.LeaseAt(at) == Live:
		return Violate(PExclusion, "claim at %s returned job %d, whose generation %d still held a lease that was certainly live: %s", at, j.ID, j.Generation, j.lease())
	case j.Locked:
		return Violate(PSkipLocked, "claim returned job %d, which another session holds row-locked", j.ID)
	case j.State == Ready && dueAt(j.Due, at) == Over:
		return Violate(PScheduling, "claim at %s returned job %d, which is not due before %s (%s)", at, j.ID, Stamp(j.Due.From), q.dueWhy(j))
	case lc.AttemptsAtClaim && lc.exhausted(j.Attempts):
		return Violate(PRetries, "claim returned job %d for attempt %d; the queue allows %d", j.ID, j.Attempts+1, lc.MaxAttempts)
	}
	return nil
}

// lost is the verdict on a claim in window at that returned nothing while job id was certainly
// eligible: a job no claim takes is lost, one that a failure made ready again is a failure
// lost, and one a drain cannot take is a drain that cannot account for every job.
func (q *Queue) lost(at Window, id int64) *Violation {
	j := q.jobs[id]
	if q.Draining && q.Shape.Life.On {
		return Violate(PDrain, "the drain's claim at %s returned no job, but job %d is eligible and unlocked (%s%s): the drain cannot account for it", at, id, q.describe(id), q.since(j))
	}
	if j.Failed && j.State == Ready {
		return Violate(PRetries, "claim at %s returned no job, but job %d failed and is due again since %s (%d attempts, kept %q): the failure lost the job", at, id, Stamp(j.Due.To), j.Attempts, j.Kept)
	}
	return Violate(PRecovery, "claim at %s returned no job, but job %d is eligible and unlocked (%s)", at, id, q.describe(id))
}

// dueWhy says what made a ready job due when it is.
func (q *Queue) dueWhy(j *Job) string {
	if j.Failed {
		return fmt.Sprintf("its backoff after attempt %d", j.Attempts)
	}
	return "its run-at time"
}

// skipped narrows what a claim in window at passed over: a running job's lease was not yet over
// when the claim looked at it, so it ends no earlier than the window's start (a queue whose
// claims leave expired jobs to its rescue step tells nothing by passing one over); a ready job
// was not yet due, so it becomes due no earlier than the window's start.
func (q *Queue) skipped(at Window, which func(*Job) bool) {
	for _, id := range q.ids {
		j := q.jobs[id]
		switch {
		case j.Locked || !which(j):
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
	j, ok := q.jobs[id]
	if !ok {
		return Over
	}
	return completableAt(j.State, j.Generation, gen, j.Until, at)
}

// Complete checks the number of rows a complete(id, gen) in window at reported, and applies it.
func (q *Queue) Complete(at Window, id, gen, rows int64) error {
	want := q.CompleteWouldSucceed(at, id, gen)
	j := q.jobs[id]
	switch {
	case rows != 0 && rows != 1:
		return Violate(PFencing, "complete(%d, gen %d) reported %d rows; a completion changes 0 or 1", id, gen, rows)
	case want == Live && rows == 0:
		return Violate(PFencing, "complete(%d, gen %d) at %s by the current owner changed 0 rows, though its lease was certainly live: %s", id, gen, at, j.lease())
	case want == Over && rows == 1:
		v := q.whyNotComplete(at, id, gen, j)
		if v.Property != PFencing || q.Shape.Promised(PFencing) || j == nil {
			return v
		}
		// Not promised: the job is done now, as the queue says, and the run goes on.
		v.NotPromised = true
		j.State = Done
		q.completions[id]++
		return v
	case want == Uncertain && rows == 0:
		j.Until = j.Until.NotAfter(at.To)
	}
	if rows == 1 {
		j.State = Done
		q.completions[id]++
	}
	return nil
}

func (q *Queue) whyNotComplete(at Window, id, gen int64, j *Job) *Violation {
	switch {
	case j == nil:
		return Violate(PFencing, "complete(%d, gen %d) changed 1 row, but job %d does not exist", id, gen, id)
	case j.State == Done:
		return Violate(PDoneOnce, "complete(%d, gen %d) changed 1 row, but the job was already done", id, gen)
	case j.State == Dead:
		return Violate(PRetries, "complete(%d, gen %d) changed 1 row, but the job is dead (dead is terminal)", id, gen)
	case j.State != Running:
		return Violate(PFencing, "complete(%d, gen %d) changed 1 row, but the job is %s, not running", id, gen, j.State)
	case j.Generation != gen:
		return Violate(PFencing, "complete(%d, gen %d) changed 1 row, but the current generation is %d: a stale generation completed the job", id, gen, j.Generation)
	default:
		return Violate(PFencing, "complete(%d, gen %d) at %s changed 1 row, but its lease was certainly over: %s", id, gen, at, j.lease())
	}
}

// Expire applies the test hook that moves a job's lease into the past, run in window at.
func (q *Queue) Expire(at Window, id int64) {
	j, ok := q.jobs[id]
	switch {
	case !ok:
	case q.Shape.TxBound && j.State == Running:
		// The lease was the claim's transaction, now aborted: the job is as it was before.
		j.State, j.Until, j.Lease, j.Claimed = Ready, Window{}, 0, Window{}
	default:
		j.Until, j.Lease = at.Shift(-ExpireBy), 0
	}
}

// Rescue checks what the queue's rescue step, run in window at, answered (the jobs it took) and
// applies it. It may take a running job whose lease is over, must take each one that is
// certainly over and that no row lock holds (else nothing reclaims it where claims leave
// expired jobs alone), and must never take a live lease, a ready job, a done or a dead one.
// A job it takes becomes ready, or, with a lifecycle, what the lapse makes it (Lifecycle.lapsed):
// dead once a counted lapse used its last attempt, or due only after its backoff.
func (q *Queue) Rescue(at Window, ids []int64) error {
	took := map[int64]bool{}
	for _, id := range ids {
		j, ok := q.jobs[id]
		switch {
		case !ok:
			return Violate(PRecovery, "rescue returned job %d, which was never enqueued", id)
		case took[id]:
			return Violate(PRecovery, "rescue returned job %d twice", id)
		case j.State == Done:
			return Violate(PDoneOnce, "rescue at %s made job %d ready again, but it was done (done is terminal)", at, id)
		case j.State == Dead:
			return Violate(PRetries, "rescue at %s took job %d, which is dead (dead is terminal)", at, id)
		case j.State != Running:
			return Violate(PRecovery, "rescue returned job %d, which is %s, not running", id, j.State)
		case j.Locked:
			return Violate(PSkipLocked, "rescue took job %d, which another session holds row-locked", id)
		case j.LeaseAt(at) == Live:
			return Violate(PExclusion, "rescue at %s took job %d from generation %d, whose lease was certainly live: %s", at, id, j.Generation, j.lease())
		}
		took[id] = true
	}
	for _, id := range q.ids {
		j := q.jobs[id]
		if j.State != Running || j.Locked {
			continue
		}
		switch l := j.LeaseAt(at); {
		case took[id]:
			if l == Uncertain {
				j.Until = j.Until.NotAfter(at.To)
			}
			if q.Shape.Life.countsLapse() {
				j.Attempts++
			}
			j.State, j.Due = q.Shape.Life.lapsed(j.Attempts, at)
			j.Until, j.Lease, j.Claimed = Window{}, 0, Window{}
		case l == Over:
			return Violate(PRecovery, "rescue at %s left job %d running, though its lease was certainly over: %s", at, id, j.lease())
		case l == Uncertain:
			j.Until = j.Until.NotBefore(at.From)
		}
	}
	return nil
}

// Lock and Unlock record another session taking and releasing a row lock on a job.
func (q *Queue) Lock(id int64) {
	if j, ok := q.jobs[id]; ok {
		j.Locked = true
	}
}

func (q *Queue) Unlock(id int64) {
	if j, ok := q.jobs[id]; ok {
		j.Locked = false
	}
}

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
		fmt.Fprintf(&b, "%d:%s/g%d", id, j.State, j.Generation)
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
// first difference is reported as a violation of the property it breaks. A running job's
// lease_live is judged only where the model is certain; elsewhere it narrows the lease's end.
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
		w := q.jobs[id]
		g, ok := gi[id]
		switch {
		case q.Shape.Deletes(w.State) && ok:
			return Violate(deletedBack(w.State), "job %d was %s and deleted, but the queue holds it again (%s): a deleted job came back", id, w.State, g)
		case q.Shape.Deletes(w.State):
			continue
		case !ok && (q.Shape.DoneDeleted || q.Shape.DeadDeleted):
			return Violate(PRecovery, "job %d is %s, but the queue no longer holds it (lost: only a %s job may vanish)", id, w.State, q.Shape.deletable())
		case !ok:
			return Violate(PRecovery, "job %d is missing from the queue (lost)", id)
		}
		present++
		if v := q.checkRow(at, w, g); v != nil {
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

// checkRow compares one job's row, read in window at, with the specification's job.
func (q *Queue) checkRow(at Window, w *Job, g Row) *Violation {
	id, lc := w.ID, q.Shape.Life
	switch {
	case g.State != w.State:
		return Violate(stateBroken(w.State, g.State, w.Failed), "job %d is %s in the queue, but the specification says %s%s", id, g.State, w.State, q.since(w))
	case g.Generation != w.Generation && !q.Shape.NoGeneration:
		return Violate(PGenerations, "job %d has generation %d in the queue, but the specification says %d", id, g.Generation, w.Generation)
	case lc.On && g.Attempts != w.Attempts:
		return Violate(PRetries, "job %d has %d attempts in the queue, but the specification says %d%s", id, g.Attempts, w.Attempts, q.since(w))
	case lc.On && g.Kept != w.Kept:
		return Violate(PRetries, "job %d keeps the error %q in the queue, but its last failure reported %q", id, g.Kept, w.Kept)
	case w.State != Running:
		return nil
	}
	switch live := w.LeaseAt(at); {
	case live == Uncertain && g.LeaseLive:
		w.Until = w.Until.NotBefore(at.From)
	case live == Uncertain:
		w.Until = w.Until.NotAfter(at.To)
	case g.LeaseLive != (live == Live):
		return Violate(PDBTime, "job %d's lease is %s in a snapshot at %s, but it was %s: %s", id, liveWord(g.LeaseLive), at, live, w.lease())
	}
	return nil
}

// stateBroken is the promise a job seen in state got, where the specification says want,
// broke: a dead job's, or one that failed, is the retries'; a done one's, done at most once;
// any other, recovery.
func stateBroken(want, got State, failed bool) Property {
	switch {
	case want == Dead || got == Dead || failed:
		return PRetries
	case want == Done || got == Done:
		return PDoneOnce
	}
	return PRecovery
}

// since says, for a verdict, what the job's last failure made of it.
func (q *Queue) since(j *Job) string {
	if !j.Failed {
		return ""
	}
	return fmt.Sprintf(" (it failed %q; the queue allows %d attempts)", j.Kept, q.Shape.Life.MaxAttempts)
}

func liveWord(b bool) string {
	if b {
		return "live"
	}
	return "expired"
}

func (q *Queue) describe(id int64) string {
	j := q.jobs[id]
	if j.State == Running {
		return fmt.Sprintf("running, generation %d, lease certainly over: %s", j.Generation, j.lease())
	}
	return string(j.State)
}
