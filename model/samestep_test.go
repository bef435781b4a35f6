package model

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestLegacySameVerdicts runs random sequential programs, each operation with an answer drawn
// near what the model expects (legal mostly, wrong now and then), through the sequential model
// as it stood before its job operations became the shared step (legacyQueue) and through
// Queue, and requires the same verdict at every operation (no violation, or the same property,
// promised or not) and the same jobs after it. The words may differ: they are the shared
// step's now. The programs where the two could part are rare (a heartbeat's worker holding a
// done job, a claim of a row another session locked), so it runs rapid's checks many times over.
func TestLegacySameVerdicts(t *testing.T) {
	for range 100 {
		rapid.Check(t, sameVerdicts)
	}
}

func sameVerdicts(t *rapid.T) {
	sh, order := drawShape(t)
	d := &duo{old: newLegacy(order), new: New(order)}
	d.old.Shape, d.new.Shape = sh, sh
	now := time.Duration(0)
	for i := range rapid.IntRange(1, 40).Draw(t, "ops") {
		now += time.Duration(rapid.IntRange(0, 1500).Draw(t, "advance")) * time.Millisecond
		at := Window{now, now + time.Duration(rapid.IntRange(0, 20).Draw(t, "width"))*time.Millisecond}
		what, errOld, errNew := d.apply(t, at)
		d.log = append(d.log, fmt.Sprintf("%d. %s at %s -> %v", i+1, what, at, errOld))
		if !sameVerdict(errOld, errNew) {
			t.Fatalf("%s: the old model says %v, the new one %v\n%s", what, errOld, errNew, strings.Join(d.log, "\n"))
		}
		if v, ok := errOld.(*Violation); ok && !v.NotPromised {
			return // after a violation, what either model holds means nothing
		}
		if a, b := d.jobs(); a != b {
			t.Fatalf("after %s the old model holds\n  %s\nthe new one\n  %s\n%s", what, a, b, strings.Join(d.log, "\n"))
		}
	}
}

func sameVerdict(a, b error) bool {
	va, _ := a.(*Violation)
	vb, _ := b.(*Violation)
	switch {
	case va == nil || vb == nil:
		return va == nil && vb == nil && (a == nil) == (b == nil)
	}
	return va.Property == vb.Property && va.NotPromised == vb.NotPromised
}

// drawShape draws a queue's declaration: the seed's, or one of the forms a queue.json declares.
func drawShape(t *rapid.T) (Shape, Order) {
	order := LowestID
	if rapid.Bool().Draw(t, "any order") {
		order = Any
	}
	var sh Shape
	sh.NoGeneration = rapid.IntRange(0, 4).Draw(t, "no generation") == 0
	sh.DoneDeleted = rapid.IntRange(0, 4).Draw(t, "done deleted") == 0
	sh.Unfenced = rapid.IntRange(0, 4).Draw(t, "unfenced") == 0
	sh.TxBound = rapid.IntRange(0, 6).Draw(t, "tx bound") == 0
	if rapid.Bool().Draw(t, "lifecycle") {
		lc, can := &sh.Life, &sh.Can
		can.Fail = true
		lc.MaxAttempts = int64(rapid.IntRange(0, 3).Draw(t, "max attempts"))
		lc.Backoff = time.Duration(rapid.IntRange(0, 3).Draw(t, "backoff")) * 300 * time.Millisecond
		lc.Factor = int64(rapid.IntRange(1, 2).Draw(t, "factor"))
		lc.AttemptsAtClaim = rapid.IntRange(0, 3).Draw(t, "at claim") == 0
		lc.LapsesCount = lc.AttemptsAtClaim || rapid.IntRange(0, 3).Draw(t, "lapses count") == 0
		lc.RescueBackoff = rapid.Bool().Draw(t, "rescue backoff")
		renews := rapid.Bool().Draw(t, "renews")
		lc.WorkerLease = renews && rapid.Bool().Draw(t, "worker lease")
		can.Renew, can.Heartbeat = renews && !lc.WorkerLease, lc.WorkerLease
		can.Delay = rapid.Bool().Draw(t, "schedules")
		can.Effect = rapid.Bool().Draw(t, "effects")
		sh.DeadDeleted = rapid.IntRange(0, 4).Draw(t, "dead deleted") == 0
	}
	sh.RescueOnly = sh.Life.LapsesCount || rapid.IntRange(0, 3).Draw(t, "rescue only") == 0
	return sh, order
}

// duo is the same program in both models.
type duo struct {
	old   *legacyQueue
	new   *Queue
	next  int64
	gens  map[int64]int64 // the generations claims returned, per job: the tokens workers hold
	log   []string
	claim int64 // the suite's claim numbers, where the queue has no generation counter
}

var workers = []string{"w0", "w1", "w2"}

// apply draws one operation and its answer, from what the old model holds, and runs it in both.
func (d *duo) apply(t *rapid.T, at Window) (string, error, error) {
	if d.gens == nil {
		d.gens = map[int64]int64{}
	}
	leases := []time.Duration{100 * time.Millisecond, time.Second, time.Hour}
	lease := leases[rapid.IntRange(0, len(leases)-1).Draw(t, "lease")]
	wrong := rapid.IntRange(0, 9).Draw(t, "wrong") == 0
	job := d.job(t)
	gen := d.gens[job] - int64(rapid.IntRange(0, 1).Draw(t, "older"))
	switch kind := rapid.IntRange(0, 13).Draw(t, "kind"); kind {
	case 0, 1:
		d.next++
		id := d.next
		if wrong {
			id = int64(rapid.IntRange(1, int(d.next)).Draw(t, "id"))
		}
		if d.old.Shape.Can.Delay && rapid.Bool().Draw(t, "later") {
			delay := time.Duration(rapid.IntRange(1, 3).Draw(t, "delay")) * 200 * time.Millisecond
			return fmt.Sprintf("enqueue %d due in %v", id, delay), d.old.EnqueueAt(id, at.Shift(delay)), d.new.EnqueueAt(id, at, delay)
		}
		return fmt.Sprintf("enqueue %d", id), d.old.Enqueue(id), d.new.Enqueue(id)
	case 2, 3, 4:
		worker := workers[rapid.IntRange(0, 2).Draw(t, "worker")]
		c := d.old.Claimable(at)
		ok, id := len(c) > 0, int64(0)
		if ok {
			id = c[0]
			if d.old.Order == Any || wrong {
				id = c[rapid.IntRange(0, len(c)-1).Draw(t, "which")]
			}
		}
		if wrong {
			ok = rapid.Bool().Draw(t, "found")
			if rapid.Bool().Draw(t, "other job") {
				id = job
			}
		}
		g := int64(0)
		if j, exists := d.old.Job(id); exists {
			g = j.Generation + 1
		}
		if d.old.Shape.NoGeneration {
			d.claim++
			g = d.claim
		}
		if wrong && rapid.Bool().Draw(t, "other gen") {
			g = int64(rapid.IntRange(0, 4).Draw(t, "gen"))
		}
		if ok {
			defer func() { d.gens[id] = max(d.gens[id], g) }()
		}
		what := fmt.Sprintf("%s claim %v -> %v job %d gen %d", worker, lease, ok, id, g)
		return what, d.old.ClaimFor(at, lease, ok, id, g, worker), d.new.ClaimFor(at, lease, ok, id, g, worker)
	case 5, 6:
		rows := d.rows(t, at, job, gen, wrong)
		return fmt.Sprintf("complete(%d, gen %d) -> %d", job, gen, rows), d.old.Complete(at, job, gen, rows), d.new.Complete(at, job, gen, rows)
	case 7:
		d.old.Expire(at, job)
		d.new.Expire(at, job)
		return fmt.Sprintf("expire %d", job), nil, nil
	case 8:
		if rapid.Bool().Draw(t, "lock") {
			d.old.Lock(job)
			d.new.Lock(job)
			return fmt.Sprintf("lock %d", job), nil, nil
		}
		d.old.Unlock(job)
		d.new.Unlock(job)
		return fmt.Sprintf("unlock %d", job), nil, nil
	case 9:
		ids := d.took(t, at, wrong, func(j legacyJob) bool { return j.State == Running && !j.Locked && j.LeaseAt(at) != Live })
		return fmt.Sprintf("rescue -> %v", ids), d.old.Rescue(at, ids), d.new.Rescue(at, ids)
	case 10:
		if !d.old.Shape.Can.Fail {
			return d.snapshot(t, at, wrong)
		}
		rows, retryable := d.rows(t, at, job, gen, wrong), rapid.IntRange(0, 3).Draw(t, "final") > 0
		text := fmt.Sprintf("e%d", rapid.IntRange(0, 2).Draw(t, "text"))
		return fmt.Sprintf("fail(%d, gen %d, %v, %s) -> %d", job, gen, retryable, text, rows),
			d.old.Fail(at, job, gen, retryable, text, rows), d.new.Fail(at, job, gen, retryable, text, rows)
	case 11:
		switch c := d.old.Shape.Can; {
		case c.Heartbeat:
			worker := workers[rapid.IntRange(0, 2).Draw(t, "worker")]
			ids := d.took(t, at, wrong, func(j legacyJob) bool {
				return j.State == Running && j.Owner == worker && !j.Locked && j.LeaseAt(at) != Over
			})
			return fmt.Sprintf("%s heartbeat %v -> %v", worker, lease, ids), d.old.Heartbeat(at, worker, lease, ids), d.new.Heartbeat(at, worker, lease, ids)
		case c.Renew:
			rows := d.rows(t, at, job, gen, wrong)
			return fmt.Sprintf("renew(%d, gen %d, %v) -> %d", job, gen, lease, rows), d.old.Renew(at, job, gen, lease, rows), d.new.Renew(at, job, gen, lease, rows)
		}
		return d.snapshot(t, at, wrong)
	case 12:
		if !d.old.Shape.Can.Effect {
			return d.snapshot(t, at, wrong)
		}
		if _, exists := d.old.Job(job); exists && rapid.Bool().Draw(t, "write") {
			// (The harness writes an effect only in the transaction of a claimed job's completion.)
			d.old.Effect(job)
			d.new.Effect(job)
			return fmt.Sprintf("effect %d", job), nil, nil
		}
		var got []EffectCount
		for _, j := range d.old.Jobs() {
			n := int64(d.old.Effects(j.ID))
			if wrong && rapid.Bool().Draw(t, "miscount") {
				n = int64(rapid.IntRange(0, 2).Draw(t, "count"))
			}
			if n > 0 {
				got = append(got, EffectCount{Job: j.ID, Count: n})
			}
		}
		return fmt.Sprintf("effects %v", got), d.old.CheckEffects(got), d.new.CheckEffects(got)
	default:
		return d.snapshot(t, at, wrong)
	}
}

// job is a job an operation names: mostly one enqueued, now and then one that is not.
func (d *duo) job(t *rapid.T) int64 {
	return int64(rapid.IntRange(1, int(d.next)+1).Draw(t, "job"))
}

// rows is a write's answer: what the old model says it must be, either where it is uncertain,
// anything when wrong.
func (d *duo) rows(t *rapid.T, at Window, job, gen int64, wrong bool) int64 {
	switch {
	case wrong:
		return int64(rapid.IntRange(0, 2).Draw(t, "rows"))
	case d.old.CompleteWouldSucceed(at, job, gen) == Live:
		return 1
	case d.old.CompleteWouldSucceed(at, job, gen) == Over:
		return 0
	}
	return int64(rapid.IntRange(0, 1).Draw(t, "rows"))
}

// took is what a rescue or heartbeat answers: the jobs it may take, each taken or not where it
// may, and, when wrong, any job at all.
func (d *duo) took(t *rapid.T, at Window, wrong bool, may func(legacyJob) bool) []int64 {
	var ids []int64
	for _, j := range d.old.Jobs() {
		if (may(j) && rapid.IntRange(0, 3).Draw(t, "take") > 0) || wrong && rapid.IntRange(0, 3).Draw(t, "stray") == 0 {
			ids = append(ids, j.ID)
		}
	}
	return ids
}

// snapshot answers what the old model holds, a lease uncertain either way, and when wrong one
// row changed.
func (d *duo) snapshot(t *rapid.T, at Window, wrong bool) (string, error, error) {
	var rows []Row
	for _, j := range d.old.Jobs() {
		if d.old.Shape.Deletes(j.State) {
			continue
		}
		r := Row{ID: j.ID, State: j.State, Generation: j.Generation, Attempts: j.Attempts, Kept: j.Kept}
		if d.old.Shape.NoGeneration {
			r.Generation = 0
		}
		if j.State == Running {
			switch j.LeaseAt(at) {
			case Live:
				r.LeaseLive = true
			case Uncertain:
				r.LeaseLive = rapid.Bool().Draw(t, "live")
			}
		}
		rows = append(rows, r)
	}
	if wrong && len(rows) > 0 {
		r := &rows[rapid.IntRange(0, len(rows)-1).Draw(t, "row")]
		switch rapid.IntRange(0, 4).Draw(t, "change") {
		case 0:
			r.State = []State{Ready, Running, Done, Dead}[rapid.IntRange(0, 3).Draw(t, "state")]
		case 1:
			r.Generation++
		case 2:
			r.LeaseLive = !r.LeaseLive
		case 3:
			r.Attempts++
		default:
			rows = append(rows[:0:0], rows...)[:len(rows)-1]
		}
	}
	return fmt.Sprintf("snapshot %v", rows), d.old.CheckSnapshot(at, rows), d.new.CheckSnapshot(at, rows)
}

// jobs prints what each model holds of every job, as far as the other can say it.
func (d *duo) jobs() (string, string) {
	var a, b []string
	for _, j := range d.old.Jobs() {
		a = append(a, d.comparable(j.ID, j.State, j.Generation, j.Until, j.Lease, j.Claimed, j.Renewed, j.Due, j.Attempts, j.Kept, j.Failed, j.Owner, j.Locked, d.old.Effects(j.ID), d.old.Completions(j.ID)))
	}
	for _, j := range d.new.Jobs() {
		b = append(b, d.comparable(j.ID, j.State, j.Gen, j.Until, j.Lease, j.Claimed, j.Renewed, j.Due, j.Attempts, j.Kept, j.Failed, j.Owner, j.Locked, d.new.Effects(j.ID), d.new.Completions(j.ID)))
	}
	return strings.Join(a, " "), strings.Join(b, " ")
}

// comparable prints a job as both models must agree on it: its lease where it runs, its due
// time where it is ready, its owner where leases are the worker's.
func (d *duo) comparable(id int64, st State, gen int64, until Window, lease time.Duration, claimed Window, renewed bool, due Window,
	attempts int64, kept string, failed bool, owner string, locked bool, effects, completions int) string {
	s := fmt.Sprintf("%d:%s/g%d/a%d/%q/%t/l%t/e%d/c%d", id, st, gen, attempts, kept, failed, locked, effects, completions)
	if st == Running {
		s += fmt.Sprintf("/until %s/%v/%s/%t", until, lease, claimed, renewed)
		if d.old.Shape.Life.WorkerLease {
			s += "/" + owner
		}
	}
	if st == Ready {
		s += fmt.Sprintf("/due %s", due)
	}
	return s
}
