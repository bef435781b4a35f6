package model

import "fmt"

// The concurrent specification of the lifecycle's operations (see Lifecycle): failures,
// renewals, business effects and their observation. Like a completion, a failure and a per-job
// renewal name their job and present its generation; a worker's heartbeat is recorded one
// operation per job it extended, as a rescue is.

type failSpec struct{ named }

func (failSpec) facts(in Input, out Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: "fail", Gen: in.Gen, Writes: true, Fails: true, Final: !in.Retryable, Accepted: out.Rows == 1}
}

// opens: a failure that retries makes its job eligible again once its backoff ends.
func (failSpec) opens(_ Input, out Output, _ func(Input) bool) bool {
	return out.Outcome == Unknown || out.Rows == 1
}

// step: like a completion, a failure must change the job iff its generation owns a live lease:
// then the job counts the attempt (where attempts end counted), keeps the text, and goes dead
// (its attempts ran out, or the failure is not retryable) or waits its backoff.
func (failSpec) step(sh Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	would := s.completable(in.Gen, in.At)
	// A queue that does not fence failures may accept a replaced owner's on a running job.
	unfenced := !sh.Promised(PWriteFencing) && s.Exists && s.State == Running
	if out.Outcome == Unknown {
		if would != Over || unfenced {
			return sh.failed(s, in), nil
		}
		return s, nil
	}
	switch {
	case out.Rows != 0 && out.Rows != 1:
		return s, Violate(PWriteFencing, "fail(%d, gen %d) reported %d rows; a failure changes 0 or 1", in.Job, in.Gen, out.Rows)
	case would == Live && out.Rows == 0:
		return s, Violate(PWriteFencing, "fail(%d, gen %d) at %s by the current owner changed 0 rows, though its lease was certainly live: %s; the failure is lost", in.Job, in.Gen, in.At, s.lease())
	case would != Over && out.Rows == 1:
		return sh.failed(s, in), nil
	case out.Rows == 0:
		return s, nil
	}
	v := staleWrite(s, in, "fail")
	if v.Property == PWriteFencing && unfenced {
		// Not promised: the failure took effect, as the queue says, and the run goes on.
		v.NotPromised = true
		return sh.failed(s, in), v
	}
	return s, v
}

func (failSpec) learn(_ Shape, s JobState, in Input, out Output) JobState {
	return refusedSawOver(s, in, out)
}

// failed is the job s after the failure in took effect: its attempt counted where attempts end
// counted, then dead, or ready once its backoff ends, keeping the failure's text.
func (sh Shape) failed(s JobState, in Input) JobState {
	if !sh.Life.AttemptsAtClaim {
		s.Attempts++
	}
	attempts := sh.Life.attemptsOf(s.Attempts, s.Gen, in.Gen)
	s.CountedBy = 0
	s = s.leaseless()
	s.State, s.Due = sh.Life.failed(attempts, in.Retryable, in.At)
	s.Kept, s.Failed = in.Text, true
	return s
}

// staleWrite is the promise an accepted fail or renewal by a token that did not own the job's
// live lease broke, the job being what it was.
func staleWrite(s JobState, in Input, what string) *Violation {
	call := fmt.Sprintf("%s(%d, gen %d)", what, in.Job, in.Gen)
	switch {
	case !s.Exists:
		return Violate(PWriteFencing, "%s changed 1 row, but the job was never enqueued", call)
	case s.State.Terminal():
		return left(s.State, "%s changed 1 row", call)
	case s.State != Running:
		return Violate(PWriteFencing, "%s changed 1 row, but the job is %s, not running", call, s.State)
	case s.Gen != in.Gen:
		return Violate(PWriteFencing, "%s changed 1 row, but the current generation is %d: a stale owner wrote to the job", call, s.Gen)
	case what == "renew":
		return Violate(PRenewal, "%s at %s changed 1 row, but its lease was certainly over (%s): the renewal revived a lapsed lease", call, in.At, s.lease())
	}
	return Violate(PWriteFencing, "%s at %s changed 1 row, but its lease was certainly over (%s): an expired owner wrote to the job", call, in.At, s.lease())
}

func (failSpec) describe(in Input, out Output) (string, string) {
	how := "retryable"
	if !in.Retryable {
		how = "final"
	}
	return fmt.Sprintf("fail(%d, gen %d, %s, %q)", in.Job, in.Gen, how, in.Text), rowsAnswer(out)
}

func rowsAnswer(out Output) string {
	if out.Outcome != Returned {
		return ""
	}
	if out.Rows == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", out.Rows)
}

// renewSpec is a renewal: a per-job one presents the job's generation (Input.Job, Gen) and must
// extend the lease iff the generation owns a live lease, to in.Lease from the renewal on. A
// worker's heartbeat (Input.Worker) names the jobs it extended in its answer, one operation
// each, and one whose answer was lost may have extended any live lease of the worker's; a
// returned heartbeat that did not extend a job of the worker's (not Found, Job naming it) is
// the sequential model's only, as a rescue's is.
type renewSpec struct{ named }

func (renewSpec) facts(in Input, out Output) Facts {
	if in.Worker != "" {
		return Facts{Job: out.Job, Named: out.Found, Statement: "renew", Writes: out.Found, Renews: true, Accepted: out.Found}
	}
	return Facts{Job: in.Job, Named: true, Statement: "renew", Gen: in.Gen, Writes: true, Renews: true, Accepted: out.Rows == 1}
}

func (renewSpec) spread(in Input, out Output) spread {
	if in.Worker != "" && out.Outcome == Unknown && !out.Found {
		return spreadEvery
	}
	return spreadNone
}

func (renewSpec) step(sh Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	if in.Worker != "" {
		return sh.heartbeat(s, in, out)
	}
	would := s.completable(in.Gen, in.At)
	if out.Outcome == Unknown {
		if would != Over {
			return renewed(s, in), nil
		}
		return s, nil
	}
	switch {
	case out.Rows != 0 && out.Rows != 1:
		return s, Violate(PRenewal, "renew(%d, gen %d) reported %d rows; a renewal changes 0 or 1", in.Job, in.Gen, out.Rows)
	case would == Live && out.Rows == 0:
		return s, Violate(PRenewal, "renew(%d, gen %d) at %s by the current owner changed 0 rows, though its lease was certainly live: %s", in.Job, in.Gen, in.At, s.lease())
	case would != Over && out.Rows == 1:
		return renewed(s, in), nil
	case out.Rows == 0:
		return s, nil
	}
	return s, staleWrite(s, in, "renew")
}

func (renewSpec) learn(_ Shape, s JobState, in Input, out Output) JobState {
	if in.Worker != "" {
		if out.Outcome == Returned && !out.Found && s.State == Running && s.Owner == in.Worker && !s.Locked && s.LeaseAt(in.At) == Uncertain {
			s.Until = s.Until.NotAfter(in.At.To)
		}
		return s
	}
	return refusedSawOver(s, in, out)
}

// heartbeat is a worker's heartbeat extending job s (or, its answer lost, maybe extending it;
// or, not Found, leaving it alone).
func (sh Shape) heartbeat(s JobState, in Input, out Output) (JobState, *Violation) {
	owned := s.State == Running && (!sh.Life.WorkerLease || s.Owner == in.Worker)
	switch {
	case out.Outcome == Unknown:
		if owned && s.LeaseAt(in.At) != Over {
			return renewed(s, in), nil
		}
		return s, nil
	case !out.Found:
		if owned && !s.Locked && s.LeaseAt(in.At) == Live {
			return s, Violate(PRenewal, "%s's heartbeat at %s left job %d to lapse, though its lease was certainly live: %s", in.Worker, in.At, in.Job, s.lease())
		}
		return s, nil
	case !s.Exists:
		return s, Violate(PRecovery, "%s's heartbeat extended job %d, which was never enqueued", in.Worker, out.Job)
	case !owned:
		return s, Violate(PWriteFencing, "%s's heartbeat extended job %d, which is %s: not a lease of %s's", in.Worker, out.Job, s, in.Worker)
	case s.LeaseAt(in.At) == Over:
		return s, Violate(PRenewal, "%s's heartbeat at %s extended job %d, whose lease was certainly over: %s; the renewal revived a lapsed lease", in.Worker, in.At, out.Job, s.lease())
	}
	return renewed(s, in), nil
}

// renewed is the job s after a renewal in in.At set its lease to in.Lease from then.
func renewed(s JobState, in Input) JobState {
	s = s.leased(in.At, in.Lease)
	s.Renewed = true
	return s
}

func (renewSpec) describe(in Input, out Output) (string, string) {
	if in.Worker != "" {
		call := fmt.Sprintf("heartbeat(%s, %v)", in.Worker, in.Lease)
		if out.Found {
			return call, fmt.Sprintf("job %d extended", out.Job)
		}
		if in.Job != 0 {
			call += fmt.Sprintf(" [as seen by job %d]", in.Job)
		}
		return call, ""
	}
	return fmt.Sprintf("renew(%d, gen %d, %v)", in.Job, in.Gen, in.Lease), rowsAnswer(out)
}

// effectSpec is a business effect that committed with its transaction, which also holds the
// job's accepted completion: it follows that completion, once. (The sequential model counts an
// effect as its statement returns, inside the transaction and before the completion; it rolls
// the transaction back, effect and all, where it does not commit, and effectsSpec judges the
// count.)
type effectSpec struct{ named }

func (effectSpec) facts(in Input, _ Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: "effect", Effect: true}
}

func (effectSpec) step(_ Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	if out.Outcome == Returned && (s.State != Done || s.Effects > 0) {
		return s, Violate(PEffects, "an effect of job %d committed, but the job is %s: only the transaction of its one accepted completion may commit one", in.Job, s)
	}
	s.Effects++
	return s, nil
}

func (effectSpec) describe(in Input, out Output) (string, string) {
	if out.Outcome == Returned {
		return fmt.Sprintf("effect(%d)", in.Job), "committed"
	}
	return fmt.Sprintf("effect(%d)", in.Job), ""
}

// effectsSpec is one job's count in the business table, as the effects statement read it (Rows):
// exactly the effects of its completions that committed, one where its accepted completion
// carried one, none for a completion that was stale, expired or refused.
type effectsSpec struct{ named }

func (effectsSpec) facts(in Input, _ Output) Facts {
	return Facts{Job: in.Job, Named: true, Statement: "effects", Tallies: true}
}

func (effectsSpec) step(_ Shape, s JobState, in Input, out Output) (JobState, *Violation) {
	n, want := out.Rows, s.Effects
	switch {
	case out.Outcome != Returned || n == want:
		return s, nil
	case n > want && want == 0:
		return s, Violate(PEffects, "the business table holds %s of job %d (%s), but no completion of it committed with its effect: a refused, stale or expired completion left its effect", effectsWord(n), in.Job, s)
	case n > want:
		return s, Violate(PEffects, "the business table holds %s of job %d, but one completion committed with its effect: the effect was applied %d times", effectsWord(n), in.Job, n)
	}
	return s, Violate(PEffects, "the business table holds %s of job %d, but its completion committed with one: the effect was lost", effectsWord(n), in.Job)
}

func effectsWord(n int64) string {
	if n == 1 {
		return "1 effect"
	}
	return fmt.Sprintf("%d effects", n)
}

func (effectsSpec) describe(in Input, out Output) (string, string) {
	if out.Outcome == Returned {
		return fmt.Sprintf("effects[job %d]", in.Job), fmt.Sprint(out.Rows)
	}
	return fmt.Sprintf("effects[job %d]", in.Job), ""
}
