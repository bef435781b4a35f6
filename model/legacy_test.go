package model

// The sequential specification as it stood before every job operation became one step that
// the sequential and concurrent models share: kept here, beside TestLegacySameVerdicts, only
// until that test has shown the shared step judges every drawn program as this did.

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// legacyJob is one row as the specification sees it. Until is where its lease ends, in database
// time: a claim in window w with lease L ends in w.Shift(L), so the model knows the end only
// as well as the claim's clock readings bracket it. Later answers narrow it (a claim that
// skipped the job saw it live, a refused completion saw it over).
type legacyJob struct {
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
func (j legacyJob) LeaseAt(at Window) Liveness { return leaseAt(j.Until, at) }

// lease describes a running job's lease for verdicts: when it was claimed, how long, and
// where its end lies.
func (j legacyJob) lease() string {
	switch {
	case j.Lease == 0:
		return fmt.Sprintf("its lease ends in %s", j.Until)
	case j.Renewed:
		return fmt.Sprintf("renewed at %s for %v, so its lease ends in %s", j.Claimed, j.Lease, j.Until)
	}
	return fmt.Sprintf("claimed at %s with a %v lease, so its lease ends in %s", j.Claimed, j.Lease, j.Until)
}

// legacyQueue is the specification's whole state. Times are database times, as offsets from an
// origin the harness chose; only comparisons between them matter.
type legacyQueue struct {
	Order Order
	Shape Shape
	// Draining: the harness is draining the queue, expiring every lease and claiming until
	// none; a job it finds eligible and cannot take is then, where the queue has a lifecycle,
	// one the drain cannot account for (property 15).
	Draining bool
	jobs     map[int64]*legacyJob
	ids      []int64 // ascending
	// completions counts accepted completions per job (property 4 wants at most one).
	completions map[int64]int
	// effects is the ledger of business effects that committed, per job (property 16).
	effects map[int64]int
}

// New returns an empty queue that promises the given claim order.
func newLegacy(order Order) *legacyQueue {
	if order == "" {
		order = LowestID
	}
	return &legacyQueue{Order: order, jobs: map[int64]*legacyJob{}, completions: map[int64]int{}, effects: map[int64]int{}}
}

// Clone returns an independent copy, for callers that explore what-ifs.
func (q *legacyQueue) Clone() *legacyQueue {
	c := newLegacy(q.Order)
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
func (q *legacyQueue) Jobs() []legacyJob {
	out := make([]legacyJob, 0, len(q.ids))
	for _, id := range q.ids {
		out = append(out, *q.jobs[id])
	}
	return out
}

// legacyJob returns one job and whether it exists.
func (q *legacyQueue) Job(id int64) (legacyJob, bool) {
	j, ok := q.jobs[id]
	if !ok {
		return legacyJob{}, false
	}
	return *j, true
}

// Len is the number of enqueued jobs.
func (q *legacyQueue) Len() int { return len(q.ids) }

// Enqueue records a job the queue created with the given id. Ids must be new and ascending:
// the specification (and lowest-id order) relies on ids increasing with enqueue order.
func (q *legacyQueue) Enqueue(id int64) error { return q.EnqueueAt(id, Window{}) }

// EnqueueAt records a job the queue created to become due in window due: the enqueue's window
// shifted by its run-at delay (the zero window: due at once).
func (q *legacyQueue) EnqueueAt(id int64, due Window) error {
	if _, dup := q.jobs[id]; dup {
		return Violate(PRecovery, "enqueue returned id %d, which already exists", id)
	}
	if n := len(q.ids); n > 0 && id < q.ids[n-1] {
		return Violate(PClaimOrder, "enqueue returned id %d after id %d: ids must ascend", id, q.ids[n-1])
	}
	q.jobs[id] = &legacyJob{ID: id, State: Ready, Due: due}
	q.ids = append(q.ids, id)
	return nil
}

// Claimable returns the jobs a claim in window at must be able to return, certainly eligible
// and unlocked, in id order (for LowestID only the first is legal).
func (q *legacyQueue) Claimable(at Window) []int64 {
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
func (q *legacyQueue) Claim(at Window, lease time.Duration, ok bool, id, gen int64) error {
	return q.ClaimFor(at, lease, ok, id, gen, "")
}

// ClaimFor is Claim by the named worker, whose lease it becomes where leases are the worker's.
func (q *legacyQueue) ClaimFor(at Window, lease time.Duration, ok bool, id, gen int64, worker string) error {
	claimable := q.Claimable(at)
	if !ok {
		if len(claimable) > 0 {
			return q.lost(at, claimable[0])
		}
		q.skipped(at, func(*legacyJob) bool { return true })
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
		q.skipped(at, func(o *legacyJob) bool { return o.ID < id })
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
func (q *legacyQueue) claimRefused(at Window, j *legacyJob) *Violation {
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
func (q *legacyQueue) lost(at Window, id int64) *Violation {
	j := q.jobs[id]
	if q.Draining && q.Shape.Can.Fail {
		return Violate(PDrain, "the drain's claim at %s returned no job, but job %d is eligible and unlocked (%s%s): the drain cannot account for it", at, id, q.describe(id), q.since(j))
	}
	if j.Failed && j.State == Ready {
		return Violate(PRetries, "claim at %s returned no job, but job %d failed and is due again since %s (%d attempts, kept %q): the failure lost the job", at, id, Stamp(j.Due.To), j.Attempts, j.Kept)
	}
	return Violate(PRecovery, "claim at %s returned no job, but job %d is eligible and unlocked (%s)", at, id, q.describe(id))
}

// dueWhy says what made a ready job due when it is.
func (q *legacyQueue) dueWhy(j *legacyJob) string {
	if j.Failed {
		return fmt.Sprintf("its backoff after attempt %d", j.Attempts)
	}
	return "its run-at time"
}

// skipped narrows what a claim in window at passed over: a running job's lease was not yet over
// when the claim looked at it, so it ends no earlier than the window's start (a queue whose
// claims leave expired jobs to its rescue step tells nothing by passing one over); a ready job
// was not yet due, so it becomes due no earlier than the window's start.
func (q *legacyQueue) skipped(at Window, which func(*legacyJob) bool) {
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
func (q *legacyQueue) CompleteWouldSucceed(at Window, id, gen int64) Liveness {
	j, ok := q.jobs[id]
	if !ok {
		return Over
	}
	return completableAt(j.State, j.Generation, gen, j.Until, at)
}

// Complete checks the number of rows a complete(id, gen) in window at reported, and applies it.
func (q *legacyQueue) Complete(at Window, id, gen, rows int64) error {
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

func (q *legacyQueue) whyNotComplete(at Window, id, gen int64, j *legacyJob) *Violation {
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
func (q *legacyQueue) Expire(at Window, id int64) {
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
func (q *legacyQueue) Rescue(at Window, ids []int64) error {
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
func (q *legacyQueue) Lock(id int64) {
	if j, ok := q.jobs[id]; ok {
		j.Locked = true
	}
}

func (q *legacyQueue) Unlock(id int64) {
	if j, ok := q.jobs[id]; ok {
		j.Locked = false
	}
}

// Completions is the number of accepted completions of a job.
func (q *legacyQueue) Completions(id int64) int { return q.completions[id] }

// String is the specification's state, one job after another, each running one with where
// its lease ends.
func (q *legacyQueue) String() string {
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
func (q *legacyQueue) CheckSnapshot(at Window, got []Row) error {
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
func (q *legacyQueue) checkRow(at Window, w *legacyJob, g Row) *Violation {
	id := w.ID
	switch {
	case g.State != w.State:
		return Violate(legacyStateBroken(w.State, g.State, w.Failed), "job %d is %s in the queue, but the specification says %s%s", id, g.State, w.State, q.since(w))
	case g.Generation != w.Generation && !q.Shape.NoGeneration:
		return Violate(PGenerations, "job %d has generation %d in the queue, but the specification says %d", id, g.Generation, w.Generation)
	case q.Shape.Can.Fail && g.Attempts != w.Attempts:
		return Violate(PRetries, "job %d has %d attempts in the queue, but the specification says %d%s", id, g.Attempts, w.Attempts, q.since(w))
	case q.Shape.Can.Fail && g.Kept != w.Kept:
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
		return Violate(PDBTime, "job %d's lease is %s in a snapshot at %s, but it was %s: %s", id, legacyLiveWord(g.LeaseLive), at, live, w.lease())
	}
	return nil
}

// legacyStateBroken is the promise a job seen in state got, where the specification says want,
// broke: a dead job's, or one that failed, is the retries'; a done one's, done at most once;
// any other, recovery.
func legacyStateBroken(want, got State, failed bool) Property {
	switch {
	case want == Dead || got == Dead || failed:
		return PRetries
	case want == Done || got == Done:
		return PDoneOnce
	}
	return PRecovery
}

// since says, for a verdict, what the job's last failure made of it.
func (q *legacyQueue) since(j *legacyJob) string {
	if !j.Failed {
		return ""
	}
	return fmt.Sprintf(" (it failed %q; the queue allows %d attempts)", j.Kept, q.Shape.Life.MaxAttempts)
}

func legacyLiveWord(b bool) string {
	if b {
		return "live"
	}
	return "expired"
}

func (q *legacyQueue) describe(id int64) string {
	j := q.jobs[id]
	if j.State == Running {
		return fmt.Sprintf("running, generation %d, lease certainly over: %s", j.Generation, j.lease())
	}
	return string(j.State)
}

// Fail checks the rows a fail(id, gen, retryable, text) in window at reported, and applies it.
// Like a completion, it must change the job iff the generation owns a live lease: then the job
// counts the attempt (where attempts end counted), keeps the text, and goes dead (its attempts
// ran out, or the failure is not retryable) or waits its backoff.
func (q *legacyQueue) Fail(at Window, id, gen int64, retryable bool, text string, rows int64) error {
	want := q.CompleteWouldSucceed(at, id, gen)
	j := q.jobs[id]
	switch {
	case rows != 0 && rows != 1:
		return Violate(PWriteFencing, "fail(%d, gen %d) reported %d rows; a failure changes 0 or 1", id, gen, rows)
	case want == Live && rows == 0:
		return Violate(PWriteFencing, "fail(%d, gen %d) at %s by the current owner changed 0 rows, though its lease was certainly live: %s; the failure is lost", id, gen, at, j.lease())
	case want == Over && rows == 1:
		v := q.staleWrite("fail", at, id, gen, j)
		if v.Property != PWriteFencing || q.Shape.Promised(PWriteFencing) || j == nil || j.State != Running {
			return v
		}
		// Not promised: the failure took effect, as the queue says, and the run goes on.
		v.NotPromised = true
		q.failed(j, at, gen, retryable, text)
		return v
	case want == Uncertain && rows == 0:
		j.Until = j.Until.NotAfter(at.To)
	}
	if rows == 1 {
		q.failed(j, at, gen, retryable, text)
	}
	return nil
}

// failed applies an accepted failure of job j by generation gen.
func (q *legacyQueue) failed(j *legacyJob, at Window, gen int64, retryable bool, text string) {
	lc := q.Shape.Life
	if !lc.AttemptsAtClaim {
		j.Attempts++
	}
	j.State, j.Due = lc.failed(lc.attemptsOf(j.Attempts, j.Generation, gen), retryable, at)
	j.Kept, j.Failed = text, true
	j.Until, j.Lease, j.Claimed, j.Owner, j.Renewed = Window{}, 0, Window{}, "", false
}

// staleWrite is the promise a fail or renewal of job j that changed a row broke, where it must
// have changed nothing.
func (q *legacyQueue) staleWrite(what string, at Window, id, gen int64, j *legacyJob) *Violation {
	call := fmt.Sprintf("%s(%d, gen %d)", what, id, gen)
	if j == nil {
		return legacyStaleWriteOf(call, what, false, "", 0, gen, at, "")
	}
	return legacyStaleWriteOf(call, what, true, j.State, j.Generation, gen, at, j.lease())
}

// Renew checks the rows a renew(id, gen, lease) in window at reported, and applies it: it must
// extend the lease iff the generation owns a live lease, to lease from the renewal on.
func (q *legacyQueue) Renew(at Window, id, gen int64, lease time.Duration, rows int64) error {
	want := q.CompleteWouldSucceed(at, id, gen)
	j := q.jobs[id]
	switch {
	case rows != 0 && rows != 1:
		return Violate(PRenewal, "renew(%d, gen %d) reported %d rows; a renewal changes 0 or 1", id, gen, rows)
	case want == Live && rows == 0:
		return Violate(PRenewal, "renew(%d, gen %d) at %s by the current owner changed 0 rows, though its lease was certainly live: %s", id, gen, at, j.lease())
	case want == Over && rows == 1:
		return q.staleWrite("renew", at, id, gen, j)
	case want == Uncertain && rows == 0:
		j.Until = j.Until.NotAfter(at.To)
	case rows == 1:
		j.renewed(at, lease)
	}
	return nil
}

// renewed sets the lease of a job whose renewal in window at was accepted: it was live then,
// and ends lease later.
func (j *legacyJob) renewed(at Window, lease time.Duration) {
	j.Until, j.Lease, j.Claimed, j.Renewed = at.Shift(lease), lease, at, true
}

// Heartbeat checks what worker's heartbeat in window at, asking for lease, answered (the jobs
// whose leases it extended) and applies it: it must extend every live lease the worker holds
// that no row lock keeps it from, and no other.
func (q *legacyQueue) Heartbeat(at Window, worker string, lease time.Duration, ids []int64) error {
	took := map[int64]bool{}
	for _, id := range ids {
		j, ok := q.jobs[id]
		switch {
		case !ok:
			return Violate(PRecovery, "%s's heartbeat extended job %d, which was never enqueued", worker, id)
		case took[id]:
			return Violate(PRenewal, "%s's heartbeat extended job %d twice", worker, id)
		case j.State != Running || j.Owner != worker:
			return Violate(PWriteFencing, "%s's heartbeat extended job %d, which is %s under %q's claim: not a lease of %s's", worker, id, j.State, j.Owner, worker)
		case j.LeaseAt(at) == Over:
			return Violate(PRenewal, "%s's heartbeat at %s extended job %d, whose lease was certainly over: %s; the renewal revived a lapsed lease", worker, at, id, j.lease())
		}
		took[id] = true
	}
	for _, id := range q.ids {
		j := q.jobs[id]
		if j.State != Running || j.Owner != worker || j.Locked {
			continue
		}
		switch l := j.LeaseAt(at); {
		case took[id]:
			j.Until = j.Until.NotBefore(at.From)
			j.renewed(at, lease)
		case l == Live:
			return Violate(PRenewal, "%s's heartbeat at %s left job %d to lapse, though its lease was certainly live: %s", worker, at, id, j.lease())
		case l == Uncertain:
			j.Until = j.Until.NotAfter(at.To)
		}
	}
	return nil
}

// Effect records a business effect that committed with its transaction, which holds the job's
// accepted completion: the suite's ledger of the effects it caused.
func (q *legacyQueue) Effect(id int64) { q.effects[id]++ }

// Effects is how many business effects of a job the ledger holds.
func (q *legacyQueue) Effects(id int64) int { return q.effects[id] }

// CheckEffects compares the business table's counts with the ledger: every job holds exactly
// the effects of its completions that committed, one where its accepted completion carried
// one, none for a completion that was stale, expired or refused.
func (q *legacyQueue) CheckEffects(got []EffectCount) error {
	held := map[int64]int64{}
	for _, e := range got {
		if _, ok := q.jobs[e.Job]; !ok {
			return Violate(PEffects, "the business table holds %s of job %d, which was never enqueued", legacyEffectsWord(e.Count), e.Job)
		}
		held[e.Job] += e.Count
	}
	ids := append([]int64(nil), q.ids...)
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	for _, id := range ids {
		want, n := int64(q.effects[id]), held[id]
		switch j := q.jobs[id]; {
		case n > want && want == 0:
			return Violate(PEffects, "the business table holds %s of job %d (%s), but no completion of it committed with its effect: a refused, stale or expired completion left its effect", legacyEffectsWord(n), id, j.State)
		case n > want:
			return Violate(PEffects, "the business table holds %s of job %d, but one completion committed with its effect: the effect was applied %d times", legacyEffectsWord(n), id, n)
		case n < want:
			return Violate(PEffects, "the business table holds %s of job %d, but its completion committed with one: the effect was lost", legacyEffectsWord(n), id)
		}
	}
	return nil
}

func legacyEffectsWord(n int64) string {
	if n == 1 {
		return "1 effect"
	}
	return fmt.Sprintf("%d effects", n)
}

// legacyStaleWriteOf is staleWrite for a job that exists or not, in state st at generation cur, whose
// lease ended as lease says, written by generation gen in window at.
func legacyStaleWriteOf(call, what string, exists bool, st State, cur, gen int64, at Window, lease string) *Violation {
	switch {
	case !exists:
		return Violate(PWriteFencing, "%s changed 1 row, but the job was never enqueued", call)
	case st == Done:
		return Violate(PDoneOnce, "%s changed 1 row, but the job was done (done is terminal)", call)
	case st == Dead:
		return Violate(PRetries, "%s changed 1 row, but the job is dead (dead is terminal)", call)
	case st != Running:
		return Violate(PWriteFencing, "%s changed 1 row, but the job is %s, not running", call, st)
	case cur != gen:
		return Violate(PWriteFencing, "%s changed 1 row, but the current generation is %d: a stale owner wrote to the job", call, cur)
	case what == "renew":
		return Violate(PRenewal, "%s at %s changed 1 row, but its lease was certainly over (%s): the renewal revived a lapsed lease", call, at, lease)
	}
	return Violate(PWriteFencing, "%s at %s changed 1 row, but its lease was certainly over (%s): an expired owner wrote to the job", call, at, lease)
}
