package model

import (
	"fmt"
	"math"
	"time"
)

// Window is a span of database time, as offsets from a run's origin: the harness read the
// database clock just before and just after a statement, so every clock_timestamp() the
// statement evaluated, and the instant it took effect, lies in [From, To]. To is Never when
// the answer never came back. The model never guesses a timing margin: a slow machine widens
// windows, and a wider window only makes more answers legal.
type Window struct {
	From time.Duration `json:"from"`
	To   time.Duration `json:"to"`
}

// Never is a time no run reaches: the end of a lease that outlives the run, the return of an
// answer that was lost.
const Never = time.Duration(math.MaxInt64)

// At is the window of an instant known exactly (the model's own tests, old histories).
func At(t time.Duration) Window { return Window{t, t} }

// Shift moves a window by d, saturating at Never: a lease of length d claimed in w ends in
// w.Shift(d).
func (w Window) Shift(d time.Duration) Window { return Window{add(w.From, d), add(w.To, d)} }

// NotBefore and NotAfter narrow a lease's end by what an uncertain answer taught: a claim
// that skipped the job or a snapshot that saw it live (it ends no earlier than the window's
// start), a claim that took it or a completion refused (no later than the window's end).
// An uncertain lease is never narrowed to nothing; answers that contradict each other show up
// as certain ones.
func (w Window) NotBefore(t time.Duration) Window { return Window{max(w.From, t), w.To} }
func (w Window) NotAfter(t time.Duration) Window  { return Window{w.From, min(w.To, t)} }

func add(t, d time.Duration) time.Duration {
	if t == Never || d == Never || (d > 0 && t > Never-d) {
		return Never
	}
	return t + d
}

func (w Window) String() string {
	if Stamp(w.From) == Stamp(w.To) {
		return Stamp(w.From)
	}
	return Stamp(w.From) + ".." + Stamp(w.To)
}

// Stamp prints a database time as an offset from the run's origin, to the millisecond, as
// traces and verdicts show it.
func Stamp(t time.Duration) string {
	if t == Never {
		return "never"
	}
	return fmt.Sprintf("%+.3fs", t.Seconds())
}

// Liveness is what a running job's lease is at a window: certainly live, certainly over, or
// either (its end may lie inside the window).
type Liveness int

const (
	Over Liveness = iota
	Uncertain
	Live
)

func (l Liveness) String() string {
	switch l {
	case Live:
		return "certainly live"
	case Over:
		return "certainly over"
	}
	return "uncertain"
}

// completableAt says whether complete(id, gen) in window at must succeed (Live), must change
// nothing (Over), or may do either, on a job in state st at generation cur whose lease ends in
// until.
func completableAt(st State, cur, gen int64, until, at Window) Liveness {
	if st != Running || cur != gen {
		return Over
	}
	return leaseAt(until, at)
}

// leaseAt judges a lease whose end lies in until, seen by a statement running in at: live
// while lease_until > t, over (eligible) while lease_until < t, for the t the statement read.
func leaseAt(until, at Window) Liveness {
	switch {
	case until.From > at.To:
		return Live
	case until.To < at.From:
		return Over
	}
	return Uncertain
}
