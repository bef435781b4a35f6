package model

import (
	"fmt"
	"time"
)

// JobState is one job as the specification sees it, in every mode; the zero value is "not
// enqueued". Every job operation is one step from a JobState to the next (see spec.step), which
// the sequential model (Queue) and the concurrent one (Porcupine) share.
//
// Until is where a running job's lease ends, in database time: a claim in window w with lease
// L ends in w.Shift(L), so the model knows the end only as well as the claim's clock readings
// bracket it. Lease is the length the last claim or renewal asked for (0: none known, as after
// an expiry), Claimed when it ran, Renewed whether a renewal set it. Due is when a ready job
// becomes due (its run-at time, or the end of its backoff; zero: from the start). These are
// kept zero where they mean nothing (a lease once the job is no longer running, a due time once
// it is claimed), so that equal states compare equal.
//
// The lifecycle's (see Lifecycle): Attempts as the queue counts them, Kept the error text its
// last failure kept, Failed whether it ever failed, Effects the business effects that committed
// with it, Owner the worker holding a worker-owned lease; CountedBy the property of the
// operation that last set Attempts, where one of the queue's own did (0: the retries judge
// them). Locked: another session's open
// transaction holds the job's row lock (the sequential model's; the concurrent one leaves row
// locks to the checks that see waits).
type JobState struct {
	Exists    bool
	State     State
	Gen       int64
	Until     Window
	Lease     time.Duration
	Claimed   Window
	Renewed   bool
	Due       Window
	Attempts  int64
	Kept      string
	Failed    bool
	Effects   int64
	Owner     string
	CountedBy Property
	Locked    bool
	Key       string // the key the job holds while at no end, where it was enqueued by one
}

// Job is one enqueued job and its state.
type Job struct {
	ID int64
	JobState
}

// LeaseAt says whether a running job's lease is live at a statement that ran in window at.
func (s JobState) LeaseAt(at Window) Liveness { return leaseAt(s.Until, at) }

// lease describes a running job's lease for verdicts: when it was claimed, how long, and
// where its end lies.
func (s JobState) lease() string {
	switch {
	case s.Lease == 0:
		return fmt.Sprintf("its lease ends in %s", s.Until)
	case s.Renewed:
		return fmt.Sprintf("renewed at %s for %v, so its lease ends in %s", s.Claimed, s.Lease, s.Until)
	}
	return fmt.Sprintf("claimed at %s with a %v lease, so its lease ends in %s", s.Claimed, s.Lease, s.Until)
}

// leaseless is s once it holds no lease: ready, done or dead, or not yet claimed.
func (s JobState) leaseless() JobState {
	s.Until, s.Lease, s.Claimed, s.Renewed, s.Owner = Window{}, 0, Window{}, false, ""
	return s
}

// leased is s holding a lease asked for in window at, for lease (0: one that outlives the run).
func (s JobState) leased(at Window, lease time.Duration) JobState {
	s.Until, s.Lease, s.Claimed = Window{Never, Never}, lease, at
	if lease != 0 {
		s.Until = at.Shift(lease)
	}
	return s
}

// eligible: may a claim in window at take the job (Live: it must be able to), on a queue of the
// seed's shape.
func (s JobState) eligible(at Window) Liveness { return Shape{}.eligible(s, at) }

// eligible: may a claim in window at take the job s (Live: it must be able to).
func (sh Shape) eligible(s JobState, at Window) Liveness {
	if !s.Exists {
		return Over
	}
	return sh.claimable(s.State, s.Until, s.Due, s.Attempts, at, false)
}

// completable: must a completion (or a failure, or a renewal) presenting generation gen in
// window at change the job (Live), must it change nothing (Over), or may it do either.
func (s JobState) completable(gen int64, at Window) Liveness {
	if !s.Exists {
		return Over
	}
	return completableAt(s.State, s.Gen, gen, s.Until, at)
}

func (s JobState) String() string {
	switch {
	case !s.Exists:
		return "not enqueued"
	case s.State == Running && s.Until.From == Never:
		return fmt.Sprintf("running g%d live", s.Gen)
	case s.State == Running:
		return fmt.Sprintf("running g%d, lease ends %s", s.Gen, s.Until) + s.life()
	case s.State == Ready && s.Due != Window{}:
		return fmt.Sprintf("ready g%d, due %s", s.Gen, s.Due) + s.life()
	}
	return fmt.Sprintf("%s g%d", s.State, s.Gen) + s.life()
}

// life is what the lifecycle adds to a job's description.
func (s JobState) life() string {
	var out string
	if s.Attempts > 0 {
		out += fmt.Sprintf(", %d attempts", s.Attempts)
	}
	if s.Failed {
		out += fmt.Sprintf(", kept %q", s.Kept)
	}
	if s.Effects > 0 {
		out += fmt.Sprintf(", %d effects", s.Effects)
	}
	return out
}

// attemptsBroken is the property a wrong count of the job's attempts breaks: the one of the
// operation that last set it, or the retries'.
func (s JobState) attemptsBroken() Property {
	if s.CountedBy != 0 {
		return s.CountedBy
	}
	return PRetries
}

// since says, for a verdict, what the job's last failure made of it.
func (sh Shape) since(s JobState) string {
	if !s.Failed {
		return ""
	}
	return fmt.Sprintf(" (it failed %q; the queue allows %d attempts)", s.Kept, sh.Life.MaxAttempts)
}

// dueWhy says what made a ready job due when it is.
func (s JobState) dueWhy() string {
	if s.Failed {
		return fmt.Sprintf("its backoff after attempt %d", s.Attempts)
	}
	return "its run-at time"
}

func liveWord(b bool) string {
	if b {
		return "live"
	}
	return "expired"
}
