package observed

import (
	"fmt"
	"sort"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
	"github.com/pgqcheck/pgqcheck/model"
)

// Verdict is what the checks of observed executions found, beside the history's own checks:
// each finding a value with its property, as every mode's are.
type Verdict struct {
	Executions int
	// Execs are the executions judged, in the order they began.
	Execs []Execution
	// Effects is the business effects the last snapshot counted (-1: the queue counts none).
	Effects int64
	// Findings break a promise the queue makes; NotPromised are what it did that it declares
	// it does not promise (measured, and failing nothing).
	Findings    []*Finding
	NotPromised []*Finding
	// LastSeen says where each job the drain left unfinished was last seen.
	LastSeen map[int64]string
}

// Finding is one violation of observed executions, with the database time it happened at
// (from the run's first reading) and the executions it concerns.
type Finding struct {
	Violation *model.Violation
	At        time.Duration
	Job       int64
}

// OK reports whether every promise the queue makes held.
func (v *Verdict) OK() bool { return v == nil || len(v.Findings) == 0 }

// Rules are what the checks of observed executions judge by: the queue's shape (what it
// promises), the lease a claim holds (or the horizon before the queue may take a job from the
// execution that holds it), the attempts its configuration allows, and each job's state at the
// last snapshot.
type Rules struct {
	Shape       model.Shape
	Lease       time.Duration
	MaxAttempts int64
	Final       map[int64]model.Row
	// Done are the jobs done at the end: done in the last snapshot, or gone from it where
	// the queue deletes done jobs.
	Done []int64
}

// Check judges observed executions, job by job: two executions of one job overlapping while
// the first's lease was certainly live (property 2); a completion accepted from an execution
// whose job another execution had begun since (property 1); an execution beyond the attempts
// allowed, or a job buried before them (property 12); an execution begun before its job's
// run-at time (property 14); a done job's business effects, one (property 16), where the queue
// counts them. Windows are used as every mode uses them: an execution's claim lies between its
// claimed and start readings, so its lease ends no earlier than claimed+lease; only what is
// certain on those windows counts.
func (b *Builder) Check(r Rules) *Verdict {
	execs := b.Executions()
	v := &Verdict{Executions: len(execs), Execs: execs, Effects: -1, LastSeen: map[int64]string{}}
	byJob := map[int64][]Execution{}
	for _, e := range execs {
		byJob[e.Job] = append(byJob[e.Job], e)
	}
	ids := make([]int64, 0, len(byJob))
	for id := range byJob {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	enq := b.enqueues()
	for _, id := range ids {
		for _, f := range []*Finding{b.overlap(byJob[id], r), b.stale(id, byJob[id]), b.attempts(id, byJob[id], r), b.early(id, byJob[id], enq[id])} {
			if f != nil {
				v.add(r.Shape, f)
			}
		}
	}
	for _, table := range []struct {
		counts map[int64]int64
		p      model.Property
	}{{b.Effects, model.PEffects}, {b.External, model.PExternal}} {
		if table.counts == nil {
			continue
		}
		v.Effects = max(v.Effects, 0)
		for _, n := range table.counts {
			v.Effects += n
		}
		for _, id := range r.Done {
			if f := b.effects(id, table.counts[id], byJob[id], table.p); f != nil {
				// A destination that applies every call fences nothing: a duplicate there is
				// measured, as a queue that promises at least once does; a lost one is not.
				f.Violation.NotPromised = table.p == model.PExternal && table.counts[id] > 1
				v.add(r.Shape, f)
			}
		}
	}
	return v
}

// enqueued is a job's acknowledged enqueue: when it ran, and the run-at delay it asked for.
type enqueued struct {
	at    model.Window
	delay time.Duration
}

func (b *Builder) enqueues() map[int64]enqueued {
	out := map[int64]enqueued{}
	for _, p := range b.ops {
		o := p.op
		if o.Input.Kind == model.OpEnqueue && o.Output.Outcome == model.Returned {
			out[o.Output.Job] = enqueued{o.Input.At, o.Input.Delay}
		}
	}
	return out
}

// stale finds a completion accepted from an execution of the job after another execution of
// it had certainly begun: the earlier one's claim was no longer current.
func (b *Builder) stale(id int64, execs []Execution) *Finding {
	for _, p := range b.ops {
		o := p.op
		if o.Input.Kind != model.OpComplete || o.Input.Job != id || o.Output.Outcome != model.Returned || o.Output.Rows != 1 {
			continue
		}
		for _, e := range execs {
			if e.Gen > o.Input.Gen && e.Life != p.life && b.sinceMicros(e.Start) < o.Input.At.From {
				return &Finding{Job: id, At: o.Input.At.To, Violation: model.Violate(model.PFencing,
					"job %d: a completion by attempt %d (%s) was accepted at %s, after %s had begun at %s: a stale execution completed the job",
					id, o.Input.Gen, p.life, o.Input.At, e, model.Stamp(b.sinceMicros(e.Start)))}
			}
		}
	}
	return nil
}

// attempts finds an execution beyond the attempts the queue's configuration allows, or a job
// buried (dead) before them with no execution of it failing for good.
func (b *Builder) attempts(id int64, execs []Execution, r Rules) *Finding {
	if r.MaxAttempts <= 0 {
		return nil
	}
	for _, e := range execs {
		if e.Gen > r.MaxAttempts {
			return &Finding{Job: id, At: b.sinceMicros(e.Start), Violation: model.Violate(model.PRetries,
				"job %d: %s began, and the queue's configuration allows %d attempts", id, e, r.MaxAttempts)}
		}
	}
	if row, ok := r.Final[id]; ok && row.State == model.Dead && row.Attempts < r.MaxAttempts {
		return &Finding{Job: id, Violation: model.Violate(model.PRetries,
			"job %d is dead after %d attempts, and the queue's configuration allows %d", id, row.Attempts, r.MaxAttempts)}
	}
	return nil
}

// early finds an execution that certainly began before its job's run-at time: the enqueue's
// window shifted by the delay it asked for.
func (b *Builder) early(id int64, execs []Execution, enq enqueued) *Finding {
	if enq.delay <= 0 {
		return nil
	}
	due := enq.at.Shift(enq.delay)
	for _, e := range execs {
		if start := b.sinceMicros(e.Start); start < due.From {
			return &Finding{Job: id, At: start, Violation: model.Violate(model.PScheduling,
				"job %d was enqueued at %s to run %v later, and %s began at %s, before its time (%s)", id, enq.at, enq.delay, e, model.Stamp(start), due)}
		}
	}
	return nil
}

func (v *Verdict) add(shape model.Shape, f *Finding) {
	if f.Violation.NotPromised || !shape.Promised(f.Violation.Property) {
		f.Violation.NotPromised = true
		v.NotPromised = append(v.NotPromised, f)
		return
	}
	v.Findings = append(v.Findings, f)
}

// overlap finds the first pair of a job's executions where one's claim certainly came while
// the other's lease was live and the other had not certainly ended it: the later claim certainly
// began after the earlier had returned, and ended before the earlier's lease could have. Where
// a claim is its transaction (gue, neoq), two executions that both completed held the job's lock
// from before their starts to their ends: if those spans overlap, so did the locks.
func (b *Builder) overlap(execs []Execution, r Rules) *Finding {
	for i, e1 := range execs {
		for _, e2 := range execs[i+1:] {
			if f := b.overlapping(e1, e2, r); f != nil {
				return f
			}
			if f := b.overlapping(e2, e1, r); f != nil {
				return f
			}
		}
	}
	return nil
}

func done(e Execution) bool { return e.End > 0 && e.Result == protocol.ResultDone }

// overlapping judges e2's claim against e1's lease.
func (b *Builder) overlapping(e1, e2 Execution, r Rules) *Finding {
	if r.Shape.TxBound {
		if !done(e1) || !done(e2) || max(e1.Start, e2.Start) >= min(e1.End, e2.End) {
			return nil
		}
		return &Finding{Job: e1.Job, At: b.sinceMicros(max(e1.Start, e2.Start)), Violation: model.Violate(model.PExclusion,
			"job %d: %s ran from %s to %s, and %s from %s to %s: both completed, so both held the job's lock at once",
			e1.Job, e1, model.Stamp(b.sinceMicros(e1.Start)), model.Stamp(b.sinceMicros(e1.End)), e2, model.Stamp(b.sinceMicros(e2.Start)), model.Stamp(b.sinceMicros(e2.End)))}
	}
	if e1.Claimed == 0 || e2.Claimed <= e1.Start {
		return nil // which claim came first is not certain
	}
	liveUntil := b.sinceMicros(e1.Claimed) + r.Lease
	claimEnd := b.sinceMicros(e2.Start)
	// An execution that finished its job, or returned its failure (a library then releases the
	// job), before the other's claim began ended its lease with it.
	ended := e1.End > 0 && e1.End < e2.Claimed &&
		(e1.Result == protocol.ResultDone || e1.Result == protocol.ResultFailed || e1.Result == protocol.ResultCancelled)
	if claimEnd >= liveUntil || ended {
		return nil
	}
	return &Finding{Job: e1.Job, At: claimEnd, Violation: model.Violate(model.PExclusion,
		"job %d: %s was claimed by %s, while %s, claimed at %s, held a lease live until at least %s",
		e1.Job, e2, model.Stamp(claimEnd), e1, model.Stamp(b.sinceMicros(e1.Claimed)), model.Stamp(liveUntil))}
}

// effects judges a done job's business effects: exactly one.
func (b *Builder) effects(id, n int64, execs []Execution, p model.Property) *Finding {
	if n == 1 {
		return nil
	}
	var last time.Duration
	for _, e := range execs {
		if e.End > 0 {
			last = max(last, b.sinceMicros(e.End))
		}
	}
	what := "lost"
	if n > 1 {
		what = "duplicated"
	}
	where := "the business table"
	if p == model.PExternal {
		where = "the destination"
	}
	return &Finding{Job: id, At: last, Violation: model.Violate(p,
		"job %d is done, and %s holds %d effects of it (%s) after %d executions", id, where, n, what, len(execs))}
}

// Where says where a job was last seen: its last execution, and whether it ever ended.
func (b *Builder) Where(id int64) string {
	var last *Execution
	for _, e := range b.Executions() {
		if e.Job == id {
			e := e
			last = &e
		}
	}
	if last == nil {
		return fmt.Sprintf("job %d was never seen by a handler", id)
	}
	end := "never ended"
	if last.End > 0 {
		end = fmt.Sprintf("ended at %s (%s)", model.Stamp(b.sinceMicros(last.End)), last.Result)
	}
	return fmt.Sprintf("job %d was last seen as %s, begun at %s, %s", id, last, model.Stamp(b.sinceMicros(last.Start)), end)
}
