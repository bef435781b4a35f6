package program

import (
	"fmt"
	"slices"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

// Approach learns how late the statement after a pause to just before a lease's edge lands,
// and keeps where each one landed. A catch that rests on a statement landing inside the last
// few milliseconds of a lease lives or dies by that lateness: on a loaded machine the timer,
// the runner's check after the pause and the statement's own trip add tens of milliseconds,
// far more than the window. The pause ends earlier by the median of the delays last measured,
// so the next statement lands where it aimed under the load there is now. The delays outlive
// a world's reset: replays of one program on one runner learn from each other.
type Approach struct {
	delays   []time.Duration // newest last
	pending  *Landing
	fresh    bool      // pending was noted in the step now ending
	Landings []Landing // this run's, in order
}

// approachDelays is how many measured delays the median is taken over: enough that one stall
// does not throw the next aim, few enough to follow a change of load within a replay or two.
const approachDelays = 5

// Landing is where the first statement after a pause to just before a lease's edge ran.
type Landing struct {
	End  time.Duration // database time the pause aimed to end at
	Aim  time.Duration // where the next statement's first clock reading was meant to come
	Edge time.Duration // the lease's earliest end
	At   model.Window  // where that statement ran
}

// Aimed reports whether the statement landed where the pause meant: before the lease's edge,
// and no further from its aim than the aim is from the edge.
func (l Landing) Aimed() bool {
	return l.At.To < l.Edge && l.At.From >= l.Aim-(l.Edge-l.Aim)
}

// Aimed counts this run's landings that came where their pauses aimed.
func (a *Approach) Aimed() int64 {
	var n int64
	for _, l := range a.Landings {
		if l.Aimed() {
			n++
		}
	}
	return n
}

func (l Landing) String() string {
	return fmt.Sprintf("aimed %s, within %v before the lease's end %s", model.Stamp(l.Aim), 2*(l.Edge-l.Aim), model.Stamp(l.Edge))
}

// Delay is how long before its aim a pause ends: the median delay measured, or, before any
// was, the runner's last check.
func (a *Approach) Delay(checkCost time.Duration) time.Duration {
	if len(a.delays) == 0 {
		return checkCost
	}
	d := slices.Clone(a.delays)
	slices.Sort(d)
	return d[len(d)/2]
}

// Pause notes a pause that ends at l.End so that the next statement lands at l.Aim, l.Edge
// being the lease's earliest end.
func (a *Approach) Pause(l Landing) {
	a.pending, a.fresh = &l, true
}

// Next is called after each step, at being where its statements ran (From < 0: it ran none).
// When the step came right after a pause that aimed it and ran a statement, its landing is
// kept and returned.
func (a *Approach) Next(at model.Window) (Landing, bool) {
	if a.fresh {
		a.fresh = false
		return Landing{}, false
	}
	l := a.pending
	a.pending = nil
	if l == nil || at.From < 0 {
		return Landing{}, false
	}
	l.At = at
	if d := at.From - l.End; d >= 0 {
		a.delays = append(a.delays, d)
		if len(a.delays) > approachDelays {
			a.delays = a.delays[1:]
		}
	}
	a.Landings = append(a.Landings, *l)
	return *l, true
}

// Carry is what a run of its own that follows keeps of a: the delays learnt, none of this
// run's landings (scheduled mode makes a world for each run).
func (a *Approach) Carry() Approach { return Approach{delays: slices.Clone(a.delays)} }

// reset starts a new run: its landings are its own, the delays learnt stay.
func (a *Approach) reset() {
	a.pending, a.fresh, a.Landings = nil, false, nil
}
