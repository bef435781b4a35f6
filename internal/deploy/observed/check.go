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

// Horizon says how long after a claim the queue may take its job from the execution that
// holds it: the lease a claim asks for, or the rescuer's horizon.
type Horizon = time.Duration

// Check judges observed executions against the queue's shape: two executions of one job
// overlapping while the first's lease was certainly live (property 2), and each job's business
// effects (property 16: one per done job where the queue counts them). Windows are used as
// every mode uses them: an execution's claim lies between its claimed and start readings, so
// its lease ends no earlier than claimed+lease; only what is certain on those windows counts.
func (b *Builder) Check(shape model.Shape, lease Horizon, done map[int64]bool) *Verdict {
	execs := b.Executions()
	v := &Verdict{Executions: len(execs), Effects: -1, LastSeen: map[int64]string{}}
	byJob := map[int64][]Execution{}
	for _, e := range execs {
		byJob[e.Job] = append(byJob[e.Job], e)
	}
	ids := make([]int64, 0, len(byJob))
	for id := range byJob {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if f := b.overlap(byJob[id], lease); f != nil {
			v.add(shape, f)
		}
	}
	if b.Effects != nil {
		v.Effects = 0
		for _, n := range b.Effects {
			v.Effects += n
		}
		for id := range done {
			if f := b.effects(id, b.Effects[id], byJob[id]); f != nil {
				v.add(shape, f)
			}
		}
	}
	return v
}

func (v *Verdict) add(shape model.Shape, f *Finding) {
	if !shape.Promised(f.Violation.Property) {
		f.Violation.NotPromised = true
		v.NotPromised = append(v.NotPromised, f)
		return
	}
	v.Findings = append(v.Findings, f)
}

// overlap finds the first pair of a job's executions (in the order they began) where the later
// one's claim certainly came while the earlier one's lease was live and the earlier one had
// not certainly ended it.
func (b *Builder) overlap(execs []Execution, lease time.Duration) *Finding {
	for i, e1 := range execs {
		if e1.Claimed == 0 {
			continue // when its claim ran is not known: its lease's end is not either
		}
		liveUntil := b.sinceMicros(e1.Claimed) + lease
		for _, e2 := range execs[i+1:] {
			claimEnd := b.sinceMicros(e2.Start)
			if claimEnd >= liveUntil {
				break
			}
			// An execution that finished or failed its job before the other's claim began
			// ended its lease with it.
			ended := e1.End > 0 && e2.Claimed > 0 && e1.End < e2.Claimed &&
				(e1.Result == protocol.ResultDone || e1.Result == protocol.ResultFailed)
			if ended || e2.Gen == e1.Gen {
				continue
			}
			return &Finding{Job: e1.Job, At: claimEnd, Violation: model.Violate(model.PExclusion,
				"job %d: %s began at %s, while %s, which began at %s, held a lease live until at least %s",
				e1.Job, e2, model.Stamp(claimEnd), e1, model.Stamp(b.sinceMicros(e1.Start)), model.Stamp(liveUntil))}
		}
	}
	return nil
}

// effects judges a done job's business effects: exactly one.
func (b *Builder) effects(id, n int64, execs []Execution) *Finding {
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
	return &Finding{Job: id, At: last, Violation: model.Violate(model.PEffects,
		"job %d is done, and the business table holds %d effects of it (%s) after %d executions", id, n, what, len(execs))}
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
