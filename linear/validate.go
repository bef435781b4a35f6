package linear

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"pgqcheck/faultproxy"
	"pgqcheck/model"
	"pgqcheck/program"
)

// Verdict is what the checks concluded about a history.
type Verdict struct {
	OK bool
	// Violation is the broken promise to report first: the job whose history has no
	// linearization, else a violation seen directly while running, else the accounting.
	// Nil when OK, or when the history itself is malformed (a harness bug, see Problems).
	Violation *model.Violation
	Problems  []string // every problem found, one line each
	// Job is the job whose history is not linearizable (0: every job's is).
	Job int64
	// Explanation shows that job's operations and the longest legal order porcupine found.
	Explanation string
	// Culprit is the operation the explanation blames, as the timeline describes it.
	Culprit      string
	Inconclusive bool // the check ran out of time on some job: neither pass nor proof
	Jobs         int  // partitions checked
	Accounting   *Accounting
	// NotPromised: what the queue did that it declares it does not promise (stale completions
	// of an at-least-once queue). They fail nothing.
	NotPromised []*model.Violation
}

func (v *Verdict) String() string {
	if v.OK {
		s := fmt.Sprintf("ok: every job's history (%d) is linearizable", v.Jobs)
		if v.Accounting != nil {
			s += "; " + v.Accounting.String()
		}
		if n := len(v.NotPromised); n > 0 {
			s += fmt.Sprintf("; not promised: %d %s observed (%s)", n, program.NotPromisedWhat(v.NotPromised[0].Property, n), v.NotPromised[0].Detail)
		}
		return s
	}
	if v.Violation != nil {
		return "FAIL: " + v.Violation.Error()
	}
	return "FAIL: " + strings.Join(v.Problems, "; ")
}

// SettledBudget bounds the linearizability check of a history whose recording or drain already
// broke a property: the verdict stands, and porcupine only adds which jobs and why. To show a job's
// history illegal it must try every order, which a queue that hands one job to two workers can
// make exponential in the claims whose outcome is unknown (seen: the whole minute, on one job).
const SettledBudget = 10 * time.Second

// Check runs every check on a history: its shape, the violations seen while it ran,
// linearizability of each job's operations (porcupine), and, for a drained run, the
// total-queue accounting. timeout bounds the linearizability check as a whole.
func Check(h *History, timeout time.Duration) *Verdict {
	v := &Verdict{OK: true}
	if err := wellFormed(h); err != nil {
		v.OK = false
		v.Problems = append(v.Problems, "malformed history (a harness bug, not a verdict on the queue): "+err.Error())
		return v
	}
	var first []*model.Violation
	// The accounting goes first: a job lost or completed twice settles the verdict, and the
	// linearizability check then gets only SettledBudget.
	if h.Drained {
		v.Accounting = Account(h)
		v.NotPromised = v.Accounting.NotPromised
	}
	crashed := crashChecks(h)
	budget := timeout
	if len(h.Findings) > 0 || len(crashed) > 0 || v.Accounting != nil && len(v.Accounting.Problems) > 0 {
		budget = min(timeout, SettledBudget)
	}
	lin := checkLinearizable(h, budget, v)
	if lin != nil {
		first = append(first, lin)
	}
	for _, f := range h.Findings {
		v.Problems = append(v.Problems, f.Error())
		first = append(first, f)
	}
	recovery := append(crashed, inventedTokens(h)...)
	for _, p := range recovery {
		v.Problems = append(v.Problems, p.Error())
		first = append(first, p)
	}
	if v.Accounting != nil {
		for _, p := range v.Accounting.Problems {
			v.Problems = append(v.Problems, p.Error())
			first = append(first, p)
		}
	}
	if v.Inconclusive {
		v.Problems = append(v.Problems, fmt.Sprintf("the linearizability check timed out after %s: no verdict on some jobs", budget))
		if v.Explanation == "" && budget < timeout {
			var b strings.Builder
			fmt.Fprintf(&b, "porcupine found no order and no proof of none within %s; the recording and the drain saw:\n", budget)
			for _, p := range first {
				fmt.Fprintf(&b, "  %s\n", p.Error())
			}
			v.Explanation = b.String()
		}
	}
	if len(v.Problems) > 0 {
		v.OK = false
	}
	if len(first) > 0 {
		v.Violation = first[0]
	}
	return v
}

// wellFormed asserts what porcupine takes for granted: every call strictly before its return,
// and each client's operations one after another (an unknown outcome ends its client).
func wellFormed(h *History) error {
	last := map[int]Op{}
	for i, o := range h.Ops {
		if o.Return <= o.Call {
			return fmt.Errorf("operation %d (%s by %s) returns at %d, not after its call at %d", i, model.DescribeOp(o.Input, o.Output), o.Session, o.Return, o.Call)
		}
		if (o.Return == Never) != (o.Output.Outcome == model.Unknown) {
			return fmt.Errorf("operation %d (%s by %s): only an unknown outcome returns at +infinity", i, model.DescribeOp(o.Input, o.Output), o.Session)
		}
		// Operations of one transaction overlap: they all return when its COMMIT does.
		if p, ok := last[o.Client]; ok && o.Input.Kind != model.OpObserve && p.Return >= o.Call && p.Return != o.Return {
			return fmt.Errorf("client %d (%s) issued %s before its previous operation %s returned", o.Client, o.Session, model.DescribeOp(o.Input, o.Output), model.DescribeOp(p.Input, p.Output))
		}
		if o.Input.Kind != model.OpObserve {
			last[o.Client] = o
		}
	}
	return nil
}

// partitionModel is the queue's porcupine model for one job's operations.
func partitionModel(sh model.Shape) porcupine.Model {
	m := sh.Porcupine()
	m.Partition = nil
	return m
}

// checkLinearizable checks each job's operations with porcupine, a few jobs at a time, and
// explains the first job (lowest id) that has no linearization.
func checkLinearizable(h *History, timeout time.Duration, v *Verdict) *model.Violation {
	parts := model.PartitionByJob(h.Porcupine())
	v.Jobs = len(parts)
	m := partitionModel(h.Shape)
	deadline := time.Now().Add(timeout)
	results := make([]porcupine.CheckResult, len(parts))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				left := time.Until(deadline)
				if left <= 0 {
					results[i] = porcupine.Unknown
					continue
				}
				results[i] = porcupine.CheckOperationsTimeout(m, parts[i], left)
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

// phantom reports whether an operation is a copy of an unknown-outcome claim or enqueue that
// named no job (see model.PartitionByJob).
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
func explain(m porcupine.Model, sh model.Shape, job int64, part []porcupine.Operation, timeout time.Duration, v *Verdict) *model.Violation {
	var bare []porcupine.Operation
	for _, o := range part {
		if !phantom(o) {
			bare = append(bare, o)
		}
	}
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
	minReturn := int64(Never)
	for i := range part {
		if !placed[i] {
			rest = append(rest, i)
			minReturn = min(minReturn, part[i].Return)
		}
	}
	sort.SliceStable(rest, func(a, b int) bool { return part[rest[a]].Call < part[rest[b]].Call })
	b.WriteString("then none of the remaining operations can come next:\n")
	var blame *model.Violation
	for _, i := range rest {
		o := part[i]
		in, out := o.Input.(model.Input), o.Output.(model.Output)
		_, bad := sh.StepJob(state, in, out)
		mark := ""
		if o.Call <= minReturn && bad != nil {
			mark = "  <- " + bad.Error()
			if blame == nil {
				blame = bad
				v.Culprit = model.DescribeOp(in, out)
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

// Accounting is the total-queue check of a drained run, in Jepsen's vocabulary: every job
// whose enqueue was acknowledged must be completed exactly once (accepted completions are the
// dequeues), none lost, none duplicated, none unexpected; and no completion may ever have been
// accepted from a stale generation.
type Accounting struct {
	Enqueued   int
	OK         int
	Lost       []int64 // enqueued, and not done after the drain
	Duplicated []int64 // more than one accepted completion
	Unexpected []int64 // claimed, completed or present without an acknowledged enqueue, or done without an accepted completion
	Stale      []int64 // a completion accepted from a generation that was not the current one
	Problems   []*model.Violation
	// NotPromised are the stale completions of a queue that does not promise fencing: measured,
	// reported, and failing nothing.
	NotPromised []*model.Violation
}

func (a *Accounting) String() string {
	return fmt.Sprintf("accounting: %d enqueued, %d ok, %d lost, %d duplicated, %d unexpected, %d stale", a.Enqueued, a.OK, len(a.Lost), len(a.Duplicated), len(a.Unexpected), len(a.Stale))
}

// Account runs the total-queue check on a drained history. The final state of each job is
// its last observation, which the drain's final snapshot provides.
func Account(h *History) *Accounting {
	a := &Accounting{}
	enqueued := map[int64]bool{}
	unknownEnqueues := 0
	type completion struct {
		gen        int64
		call, ret  int64
		unknownOut bool
	}
	accepted := map[int64][]completion{}
	maybe := map[int64]int{}
	final := map[int64]Op{}
	claims := map[int64][]struct{ gen, call, ret int64 }{}
	mentioned := map[int64]bool{}
	for _, o := range h.Ops {
		in, out := o.Input, o.Output
		switch {
		case in.Kind == model.OpEnqueue && out.Outcome == model.Returned:
			enqueued[out.Job] = true
		case in.Kind == model.OpEnqueue && out.Outcome == model.Unknown:
			unknownEnqueues++
		case in.Kind == model.OpClaim && out.Outcome == model.Returned && out.Found:
			claims[out.Job] = append(claims[out.Job], struct{ gen, call, ret int64 }{out.Gen, o.Call, o.Return})
			mentioned[out.Job] = true
		case in.Kind == model.OpComplete && out.Outcome == model.Returned && out.Rows == 1:
			accepted[in.Job] = append(accepted[in.Job], completion{gen: in.Gen, call: o.Call, ret: o.Return})
			mentioned[in.Job] = true
		case in.Kind == model.OpComplete && out.Outcome == model.Unknown:
			maybe[in.Job]++
		case in.Kind == model.OpObserve && out.Outcome == model.Returned:
			if p, ok := final[in.Job]; !ok || o.Call >= p.Call {
				final[in.Job] = o
			}
			if out.Found {
				mentioned[in.Job] = true
			}
		}
	}
	ids := func(m map[int64]bool) []int64 {
		out := make([]int64, 0, len(m))
		for id := range m {
			out = append(out, id)
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	a.Enqueued = len(enqueued)
	for _, id := range ids(enqueued) {
		f, seen := final[id]
		ok := true
		vanished := !seen || !f.Output.Found
		switch {
		case vanished && h.Shape.DoneDeleted && len(accepted[id])+maybe[id] > 0:
			// done, and deleted as the queue declares
		case vanished:
			a.Lost = append(a.Lost, id)
			a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d was enqueued and is missing after the drain (lost)", id))
			ok = false
		case f.Output.State != model.Done:
			a.Lost = append(a.Lost, id)
			a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d was enqueued and is %s after every lease lapsed and the queue drained (lost)", id, f.Output.State))
			ok = false
		case len(accepted[id]) == 0 && maybe[id] == 0:
			a.Unexpected = append(a.Unexpected, id)
			a.Problems = append(a.Problems, model.Violate(model.PFencing, "job %d is done, but no completion of it was accepted", id))
			ok = false
		}
		if n := len(accepted[id]); n > 1 {
			a.Duplicated = append(a.Duplicated, id)
			a.Problems = append(a.Problems, model.Violate(model.PDoneOnce, "job %d was completed %d times (duplicated)", id, n))
			ok = false
		}
		for _, c := range accepted[id] {
			if !staleCompletion(h.Shape, c.gen, c.call, f, seen, claims[id]) {
				continue
			}
			v := model.Violate(model.PFencing, "job %d: a completion by generation %d was accepted, but that generation was no longer current (stale)", id, c.gen)
			if h.Shape.Unfenced {
				v.NotPromised = true
				a.NotPromised = append(a.NotPromised, v)
				continue
			}
			a.Stale = append(a.Stale, id)
			a.Problems = append(a.Problems, v)
			ok = false
			break
		}
		if ok {
			a.OK++
		}
	}
	var strays []int64
	for _, id := range ids(mentioned) {
		if !enqueued[id] {
			strays = append(strays, id)
		}
	}
	// A job no acknowledged enqueue created, but that the table holds, was created by an
	// enqueue whose answer was lost: it is the queue's as much as any other, and the drain
	// must have completed it too.
	for _, id := range strays {
		if f, ok := final[id]; ok && f.Output.Found && f.Output.State != model.Done {
			a.Lost = append(a.Lost, id)
			a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d, created by an enqueue whose answer was lost, is %s after every lease lapsed and the queue drained (lost)", id, f.Output.State))
		}
	}
	if len(strays) > unknownEnqueues {
		for _, id := range strays {
			a.Unexpected = append(a.Unexpected, id)
			a.Problems = append(a.Problems, model.Violate(model.PRecovery, "job %d was claimed, completed or seen, but no enqueue of it was acknowledged (unexpected)", id))
		}
	}
	return a
}

// staleCompletion says whether an accepted completion by generation gen, called at call, was
// certainly stale: another claim of the job returned before it was called, after the claim
// that handed out gen had returned (or, where generations are the queue's own and rise, any
// later generation); or the job's final row names another generation.
func staleCompletion(sh model.Shape, gen, call int64, final Op, seen bool, claims []struct{ gen, call, ret int64 }) bool {
	if !sh.NoGeneration && seen && final.Output.Found && final.Output.Gen != gen {
		return true
	}
	var handed int64 = -1
	for _, cl := range claims {
		if cl.gen == gen && (handed < 0 || cl.ret < handed) {
			handed = cl.ret
		}
	}
	for _, cl := range claims {
		switch {
		case cl.gen == gen || cl.ret >= call:
		case !sh.NoGeneration && cl.gen > gen:
			return true
		case sh.NoGeneration && handed >= 0 && cl.call > handed:
			return true
		}
	}
	return false
}

// CountOps counts what a history holds, in the counts every mode keeps.
func CountOps(h *History) program.Counts {
	c := program.Counts{ClaimWaits: int64(len(h.Waits))}
	snaps := map[int64]bool{}
	for _, o := range h.Ops {
		c.Ops++
		in, out := o.Input, o.Output
		switch out.Outcome {
		case model.Unknown:
			c.Unknown++
		case model.Aborted:
			c.Aborted++
		}
		switch in.Kind {
		case model.OpEnqueue:
			if out.Outcome == model.Returned {
				c.Enqueued++
			}
		case model.OpClaim:
			if program.TimedLease(in.Lease) && out.Outcome != model.NotSent {
				c.TimedClaims++
			}
			switch {
			case out.Outcome != model.Returned:
			case out.Found:
				c.Claims++
			default:
				c.EmptyClaims++
			}
		case model.OpComplete:
			if out.Outcome == model.Returned {
				if out.Rows == 1 {
					c.Completions++
				} else {
					c.RejectedCompletions++
				}
			}
		case model.OpExpire:
			c.Expiries++
		case model.OpObserve:
			snaps[o.Call] = true
		case model.OpLock:
			c.Locks++
		case model.OpUnlock:
			c.Releases++
		}
	}
	c.Snapshots = int64(len(snaps))
	for _, f := range h.Faults {
		switch f.Kind {
		case "cancel":
			c.Cancels++
		case "terminate":
			c.Terminates++
		case string(faultproxy.DropReply):
			c.DroppedReplies++
		case string(faultproxy.Cut):
			c.Cuts++
		case string(faultproxy.DelayReply):
			c.Delays++
		case string(faultproxy.Stall):
			c.Stalls++
		}
	}
	return c
}
