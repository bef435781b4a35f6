package program

import (
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

func TestApproachLearnsLateness(t *testing.T) {
	var a Approach
	const check = 3 * time.Millisecond
	if d := a.Delay(check); d != check {
		t.Fatalf("before any landing the delay is the runner's check, %v; got %v", check, d)
	}
	ms := time.Millisecond
	// Three pauses, each followed by a statement that came 40, 60 and 50 ms after the pause's end.
	for _, late := range []time.Duration{40 * ms, 60 * ms, 50 * ms} {
		a.Pause(Landing{End: 1000 * ms, Aim: 990 * ms, Edge: 1000 * ms})
		if _, ok := a.Next(model.Window{From: -1}); ok {
			t.Fatal("the pause's own step is no landing")
		}
		l, ok := a.Next(model.Window{From: 1000*ms + late, To: 1001*ms + late})
		if !ok || l.Aimed() {
			t.Fatalf("a statement %v past the edge: got %+v, %v; want a landing not as aimed", late, l, ok)
		}
	}
	if d := a.Delay(check); d != 50*ms {
		t.Fatalf("delay: got %v, want the median 50ms", d)
	}
	if len(a.Landings) != 3 || a.Aimed() != 0 {
		t.Fatalf("landings: %d, %d of them aimed; want 3, none aimed", len(a.Landings), a.Aimed())
	}
	a.reset()
	if len(a.Landings) != 0 || a.Delay(check) != 50*ms {
		t.Fatalf("a reset forgets the run's landings (%d left) and keeps the delays (got %v)", len(a.Landings), a.Delay(check))
	}
	// A step that runs no statement after the pause takes the pause with it: the one after is
	// not its landing.
	a.Pause(Landing{End: 2000 * ms, Aim: 1990 * ms, Edge: 2000 * ms})
	a.Next(model.Window{From: -1})
	a.Next(model.Window{From: -1})
	if _, ok := a.Next(model.Window{From: 1991 * ms, To: 1992 * ms}); ok {
		t.Fatal("a statement two steps after the pause counted as its landing")
	}
	a.Pause(Landing{End: 3000 * ms, Aim: 2990 * ms, Edge: 3000 * ms})
	a.Next(model.Window{From: -1})
	if l, ok := a.Next(model.Window{From: 2985 * ms, To: 2986 * ms}); !ok || !l.Aimed() {
		t.Fatalf("a statement 5 ms before its aim and before the edge: got %+v, %v; want as aimed", l, ok)
	}
	if a.Aimed() != 1 {
		t.Fatalf("after one landing as aimed and none other since the reset, Aimed is %d; want 1", a.Aimed())
	}
}
