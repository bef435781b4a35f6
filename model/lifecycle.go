package model

import (
	"fmt"
	"time"
)

// Lifecycle is what a queue declares about the rest of a job's life, where it ships it (Can):
// how failures retry after a backoff, a limit on attempts, a terminal dead state with the last
// error kept, and the forms real queues give these. The zero value is the seed's: no limit, no
// backoff.
type Lifecycle struct {
	// MaxAttempts is how many attempts a job may have (0: no limit). Once its attempts reach
	// it, a failure makes the job dead instead of retrying it.
	MaxAttempts int64 `json:"max_attempts,omitempty"`
	// Backoff is how long a job that failed waits before it is due again: Backoff after its
	// first counted attempt, times Factor for each further one.
	Backoff time.Duration `json:"backoff,omitempty"`
	Factor  int64         `json:"factor,omitempty"`
	// AttemptsAtClaim: every claim is an attempt (the counter rises at the claim, so a lapsed
	// lease counts too). Otherwise the counter rises when an attempt ends: at its failure and,
	// where LapsesCount, when the rescue step finds its lease lapsed.
	AttemptsAtClaim bool `json:"attempts_at_claim,omitempty"`
	// LapsesCount: a lapsed lease counts as an attempt, so a job whose lease lapsed as often as
	// the limit allows goes dead rather than ready (where the rescue step takes lapsed jobs, it
	// makes such a job dead).
	LapsesCount bool `json:"lapses_count,omitempty"`
	// RescueBackoff: the rescue step makes a lapsed job due only after its backoff.
	RescueBackoff bool `json:"rescue_backoff,omitempty"`
	// WorkerLease: a lease belongs to the worker that claimed the job, and the worker's
	// heartbeat (Can.Heartbeat) extends every live lease it holds, so its jobs lapse together.
	WorkerLease bool `json:"worker_lease,omitempty"`
	// WholeSeconds: the queue takes leases in whole seconds; a claim's lease is rounded up.
	WholeSeconds bool `json:"whole_seconds,omitempty"`
}

// Dead is the terminal state of a job whose attempts ran out or whose failure was not
// retryable.
const Dead State = "dead"

// BackoffAfter is how long a job waits after its n-th counted attempt (n from 1) ended in a
// failure.
func (lc Lifecycle) BackoffAfter(n int64) time.Duration {
	d := lc.Backoff
	for i := int64(1); i < n && lc.Factor > 1; i++ {
		d *= time.Duration(lc.Factor)
	}
	return d
}

// exhausted says whether a job with this many counted attempts may have no more.
func (lc Lifecycle) exhausted(attempts int64) bool {
	return lc.MaxAttempts > 0 && attempts >= lc.MaxAttempts
}

// Lease is the lease a claim or a renewal asking for d holds: d, or d rounded up to whole
// seconds where the queue takes leases so.
func (lc Lifecycle) Lease(d time.Duration) time.Duration {
	if !lc.WholeSeconds || d%time.Second == 0 {
		return d
	}
	return d.Truncate(time.Second) + time.Second
}

// forms names what the queue does of a job's life, as far as it ships it.
func (lc Lifecycle) forms(c Can) []string {
	var forms []string
	if c.Fail {
		limit := "no attempt limit"
		if lc.MaxAttempts > 0 {
			limit = fmt.Sprintf("%d attempts", lc.MaxAttempts)
		}
		at := "counted when they fail"
		switch {
		case lc.AttemptsAtClaim:
			at = "counted at the claim"
		case lc.LapsesCount:
			at = "counted when they fail or lapse"
		}
		forms = append(forms, fmt.Sprintf("failures retried (%s, %s, backoff %v x%d)", limit, at, lc.Backoff, max(lc.Factor, 1)))
	}
	for _, f := range []struct {
		on   bool
		form string
	}{
		{lc.RescueBackoff, "rescued jobs wait their backoff"},
		{c.Heartbeat, "leases renewed by their worker's heartbeat"},
		{c.Renew, "leases renewed"},
		{lc.WholeSeconds, "leases in whole seconds"},
		{c.Delay, "jobs scheduled to run later"},
		{c.Effect, "business effects beside completions"},
	} {
		if f.on {
			forms = append(forms, f.form)
		}
	}
	return forms
}

// dueAt judges a job that becomes due in due (a run-at time, or the end of a backoff), seen by
// a claim running in at: Live when it is certainly due (run_at <= t), Over when it certainly is
// not yet, Uncertain when its moment may lie inside the window. The zero window is "due from the
// start": due whatever at is, since a session's statement can begin before the reading that set
// the run's origin and so run at a negative time.
func dueAt(due, at Window) Liveness {
	switch {
	case due == Window{}:
		return Live
	case due.To <= at.From:
		return Live
	case due.From > at.To:
		return Over
	}
	return Uncertain
}

// failed is a failure's effect on a job that held generation gen's live lease: with attempts
// counted (the counter after this failure), the job goes dead or waits its backoff in window at.
func (lc Lifecycle) failed(attempts int64, retryable bool, at Window) (State, Window) {
	if !retryable || lc.exhausted(attempts) {
		return Dead, Window{}
	}
	return Ready, at.Shift(lc.BackoffAfter(attempts))
}

// attemptsOf is the attempts a failure by generation gen decides on, the job being at
// generation cur with attempts counted: where claims count attempts, a replaced owner's failure
// (on a queue that does not fence it) decides by the attempt it was claimed as, as a worker
// holding that claim's row would; otherwise the job's count.
func (lc Lifecycle) attemptsOf(attempts, cur, gen int64) int64 {
	if lc.AttemptsAtClaim && gen < cur {
		return max(attempts-(cur-gen), 0)
	}
	return attempts
}

// lapsed is a rescue's effect on a job whose lease lapsed, its attempts counted as the queue
// declares (the counter after the lapse): dead once they ran out where lapses count, else
// ready, due at once or after its backoff.
func (lc Lifecycle) lapsed(attempts int64, at Window) (State, Window) {
	if (lc.LapsesCount || lc.AttemptsAtClaim) && lc.exhausted(attempts) {
		return Dead, Window{}
	}
	if lc.RescueBackoff && attempts > 0 {
		return Ready, at.Shift(lc.BackoffAfter(attempts))
	}
	return Ready, Window{}
}

// countsLapse says whether the rescue counts a lapsed lease as an attempt ended (with attempts
// counted at the claim, the lapsed attempt was counted when it began).
func (lc Lifecycle) countsLapse() bool { return lc.LapsesCount && !lc.AttemptsAtClaim }
