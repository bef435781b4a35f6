package dbtime

import (
	"testing"
	"time"

	"pgqcheck/model"
	"pgqcheck/sut"
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
