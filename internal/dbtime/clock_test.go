package dbtime

import (
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestClockWindow: the first reading is the origin; a missing first reading is bounded by the
// floor, a missing last one by nothing; the latest reading only moves forward.
func TestClockWindow(t *testing.T) {
	var c Clock
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := c.Window(sut.Clock{From: t0, To: t0.Add(2 * time.Millisecond)}, 0); got != (model.Window{From: 0, To: 2 * time.Millisecond}) {
		t.Fatalf("first window %v, want [0, 2ms]", got)
	}
	if got := c.Window(sut.Clock{To: t0.Add(5 * time.Millisecond)}, c.Latest()); got != (model.Window{From: 2 * time.Millisecond, To: 5 * time.Millisecond}) {
		t.Fatalf("window without a first reading %v, want [2ms, 5ms]", got)
	}
	if got := c.Window(sut.Clock{From: t0.Add(3 * time.Millisecond)}, c.Latest()); got != (model.Window{From: 3 * time.Millisecond, To: model.Never}) {
		t.Fatalf("window without a last reading %v, want [3ms, never]", got)
	}
	if c.Latest() != 5*time.Millisecond || c.Estimate() < 5*time.Millisecond {
		t.Fatalf("latest %v, estimate %v; want 5ms and no less", c.Latest(), c.Estimate())
	}
	c.Reset()
	if got := c.Window(sut.Clock{From: t0.Add(time.Second), To: t0.Add(time.Second)}, 0); got != (model.Window{}) {
		t.Fatalf("after a reset the next reading is the origin; got %v", got)
	}
}

// TestClockFirstWindowWithoutFirstReading: a run whose first recorded statement lost its first
// reading (a cancel that hit it) must not count its last reading from no origin. Counted from
// the zero time it saturated to Never and became the latest reading, and every later statement
// whose answer was lost then seemed to run at Never: a completion that took effect could not
// have, and the seed queue was called wrong (property 4).
func TestClockFirstWindowWithoutFirstReading(t *testing.T) {
	var c Clock
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := c.Window(sut.Clock{To: t0}, c.Latest()); got != (model.Window{From: 0, To: model.Never}) {
		t.Fatalf("first window without a first reading %v, want [0, never]", got)
	}
	if c.Latest() != 0 {
		t.Fatalf("latest %v after a last reading with no origin, want 0", c.Latest())
	}
	if got := c.Window(sut.Clock{From: t0.Add(time.Millisecond), To: t0.Add(3 * time.Millisecond)}, c.Latest()); got != (model.Window{From: 0, To: 2 * time.Millisecond}) {
		t.Fatalf("second window %v, want [0, 2ms]", got)
	}
	if got := c.Window(sut.Clock{}, c.Latest()); got != (model.Window{From: 2 * time.Millisecond, To: model.Never}) {
		t.Fatalf("a lost answer's window %v, want [2ms, never]", got)
	}
}
