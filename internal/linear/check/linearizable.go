package check

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// JobModel is the queue's porcupine model for one job's operations.
func JobModel(sh model.Shape) porcupine.Model {
	m := sh.Porcupine()
	m.Partition = nil
	return m
}

// checkLinearizable checks each job's operations with porcupine, a few jobs at a time, and
// explains the first job (lowest id) that has no linearization.
func checkLinearizable(h *history.History, timeout time.Duration, v *Conclusion) *model.Violation {
	parts := h.Shape.PartitionByJob(h.Porcupine())
	v.Jobs = len(parts)
	m := JobModel(h.Shape)
	deadline := time.Now().Add(timeout)
	results := make([]porcupine.CheckResult, len(parts))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = decide(m, parts[i], deadline)
			}
		}()
	}
	for i := range parts {
		next <- i
	}
	close(next)
	wg.Wait()
	var found *model.Violation
	var bad []string
	for i, r := range results {
		switch r {
		case porcupine.Unknown:
			v.Inconclusive = true
		case porcupine.Illegal:
			job := partitionJob(parts[i])
			if found == nil {
				found = explain(m, h.Shape, job, parts[i], time.Until(deadline), v)
				v.Job = job
			}
			if len(bad) < 20 {
				bad = append(bad, fmt.Sprint(job))
			} else if len(bad) == 20 {
				bad = append(bad, "...")
			}
		}
	}
	if len(bad) > 0 {
		v.Problems = append(v.Problems, fmt.Sprintf("not linearizable (property %d): the histories of jobs %s", model.PLinearizable, strings.Join(bad, ", ")))
	}
	return found
}

// phantomsTogether is how many of a job's phantoms (see phantom) decide gives porcupine
// together before it gives it all of them.
const phantomsTogether = 2

// decide checks one job's operations with porcupine by the deadline.
//
// A phantom can come last in any legal order of the others, where it changes nothing that
// follows (its step accepts every state), so the job's history is legal with all of its phantoms
// if it is legal with any few of them. Porcupine, given k phantoms, may try every subset of
// them at every point of the job's history: a stress round in which chaos cancelled sixteen
// claims with short leases, each copied into every job's history, took minutes a job. So the
// job is checked without its phantoms, then with each one and each two of them (a job created by
// a lost enqueue and claimed by a lost claim needs two), and with all of them only when none of
// those is legal: a verdict that differs from the check of all of them at once only in its time.
func decide(m porcupine.Model, part []porcupine.Operation, deadline time.Time) porcupine.CheckResult {
	check := func(ops []porcupine.Operation) porcupine.CheckResult {
		left := time.Until(deadline)
		if left <= 0 {
			return porcupine.Unknown
		}
		return porcupine.CheckOperationsTimeout(m, ops, left)
	}
	bare, phantoms := splitPhantoms(part)
	if len(phantoms) <= phantomsTogether {
		return check(part)
	}
	picks := [][]int{{}}
	for i := range phantoms {
		picks = append(picks, []int{i})
	}
	for i := range phantoms {
		for j := i + 1; j < len(phantoms); j++ {
			picks = append(picks, []int{i, j})
		}
	}
	for _, pick := range picks {
		ops := slices.Clip(bare)
		for _, i := range pick {
			ops = append(ops, phantoms[i])
		}
		if r := check(ops); r != porcupine.Illegal {
			return r // legal with these, so with all; or out of time
		}
	}
	return check(part)
}

// splitPhantoms splits a job's operations into its phantoms and the rest.
func splitPhantoms(part []porcupine.Operation) (bare, phantoms []porcupine.Operation) {
	for _, o := range part {
		if phantom(o) {
			phantoms = append(phantoms, o)
		} else {
			bare = append(bare, o)
		}
	}
	return bare, phantoms
}

// phantom reports whether an operation is a copy of one whose answer was lost and that named
// no job: a claim, enqueue, rescue or heartbeat (see model.Shape.PartitionByJob).
func phantom(o porcupine.Operation) bool {
	in, out := o.Input.(model.Input), o.Output.(model.Output)
	_, named := model.JobOf(in, out)
	return !named && out.Outcome == model.Unknown
}

func partitionJob(part []porcupine.Operation) int64 {
	for _, o := range part {
		if id, ok := model.JobOf(o.Input.(model.Input), o.Output.(model.Output)); ok {
			return id
		}
	}
	return part[0].Input.(model.Input).Job
}

// explain finds why a job's operations have no linearization: it replays the longest legal
// order porcupine found and names the operation that could come next but breaks a promise.
// Porcupine's partial orders come out of a map, so they are sorted first: the same history
// always gets the same explanation.
//
// Operations with unknown outcomes that named no job can make the story confusing: porcupine
// may use one to explain one answer and then fail on another. So the explanation is first
// sought without them; they are brought back only if the job's history is legal without them
// (they are then part of why it fails).
func explain(m porcupine.Model, sh model.Shape, job int64, part []porcupine.Operation, timeout time.Duration, v *Conclusion) *model.Violation {
	bare, _ := splitPhantoms(part)
	timeout = max(timeout, time.Second)
	note := ""
	if len(bare) < len(part) && porcupine.CheckOperationsTimeout(m, bare, timeout) == porcupine.Illegal {
		note = fmt.Sprintf(" (left out: %d operations with unknown outcomes that name no job; it fails without them too)", len(part)-len(bare))
		part = bare
	}
	_, info := porcupine.CheckOperationsVerbose(m, part, timeout)
	var partials [][]int
	if p := info.PartialLinearizations(); len(p) > 0 {
		partials = p[0]
	}
	sort.Slice(partials, func(a, b int) bool {
		if len(partials[a]) != len(partials[b]) {
			return len(partials[a]) > len(partials[b])
		}
		for i := range partials[a] {
			if partials[a][i] != partials[b][i] {
				return partials[a][i] < partials[b][i]
			}
		}
		return false
	})
	var longest []int
	if len(partials) > 0 {
		longest = partials[0]
	}
	state := model.JobState{}
	placed := map[int]bool{}
	var b strings.Builder
	fmt.Fprintf(&b, "job %d: %d operations%s; the longest legal order porcupine found:\n", job, len(part), note)
	for _, i := range longest {
		o := part[i]
		state, _ = sh.StepJob(state, o.Input.(model.Input), o.Output.(model.Output))
		placed[i] = true
		fmt.Fprintf(&b, "  %-44s %-12s -> %s\n", model.DescribeOp(o.Input.(model.Input), o.Output.(model.Output)), fmt.Sprint(o.Metadata), state)
	}
	var rest []int
	minReturn := int64(history.Never)
	for i := range part {
		if !placed[i] {
			rest = append(rest, i)
			minReturn = min(minReturn, part[i].Return)
		}
	}
	sort.SliceStable(rest, func(a, b int) bool { return part[rest[a]].Call < part[rest[b]].Call })
	b.WriteString("then none of the remaining operations can come next:\n")
	blamed := blameNext(sh, state, part, rest, minReturn)
	var blame *model.Violation
	for _, i := range rest {
		o := part[i]
		in, out := o.Input.(model.Input), o.Output.(model.Output)
		_, bad := sh.StepJob(state, in, out)
		mark := ""
		if o.Call <= minReturn && bad != nil {
			mark = "  <- " + bad.Error()
		}
		if i == blamed {
			blame = bad
			v.Culprit = model.DescribeOp(in, out)
			if stale := staleCompletionSeen(state, part, in, out); stale != nil {
				blame = stale
			}
		}
		fmt.Fprintf(&b, "  %-44s %-12s%s\n", model.DescribeOp(in, out), fmt.Sprint(o.Metadata), mark)
	}
	v.Explanation = b.String()
	if blame == nil {
		return model.Violate(model.PLinearizable, "job %d's operations admit no legal order (after the longest legal prefix, %d of %d, in state %s)", job, len(longest), len(part), state)
	}
	return &model.Violation{Property: blame.Property, Name: blame.Name,
		Detail: fmt.Sprintf("%s [job %d's history is not linearizable (property %d): this operation cannot follow the longest legal order of the others, which leaves the job %s]", blame.Detail, job, model.PLinearizable, state)}
}

// blameNext picks, among the operations that could come next (called before every other
// remaining one returned) and cannot, the one that broke the property: a write before an
// observation, since what a snapshot shows wrong is what some write did (a stale completion
// is property 1 wherever a snapshot lands); among those, the earliest called. -1: none.
func blameNext(sh model.Shape, state model.JobState, part []porcupine.Operation, rest []int, minReturn int64) int {
	blamed, observation := -1, false
	for _, i := range rest {
		o := part[i]
		in, out := o.Input.(model.Input), o.Output.(model.Output)
		if o.Call > minReturn {
			continue
		}
		if _, bad := sh.StepJob(state, in, out); bad == nil {
			continue
		}
		obs := model.FactsOf(in, out).Observes
		if blamed < 0 || (observation && !obs) {
			blamed, observation = i, obs
		}
	}
	return blamed
}

// staleCompletionSeen: a snapshot shows the job done where the model has it otherwise, and the
// only completions that could have done it presented a generation that was not the current
// one, their answers lost. The snapshot shows what a stale completion did: property 1.
func staleCompletionSeen(state model.JobState, part []porcupine.Operation, in model.Input, out model.Output) *model.Violation {
	if !model.FactsOf(in, out).Observes || !out.Found || out.State != model.Done || state.State == model.Done {
		return nil
	}
	var stale *model.Input
	for _, o := range part {
		ci, co := o.Input.(model.Input), o.Output.(model.Output)
		if !model.FactsOf(ci, co).Ends || co.Outcome != model.Unknown {
			continue
		}
		if state.State == model.Running && ci.Gen == state.Gen {
			return nil // the current owner's completion may have done it
		}
		stale = &ci
	}
	if stale == nil {
		return nil
	}
	return model.Violate(model.PFencing, "a snapshot shows job %d done, which only complete(%d, gen %d), whose answer was lost, could have done, but the current generation was %d: a stale generation completed the job",
		in.Job, stale.Job, stale.Gen, state.Gen)
}
