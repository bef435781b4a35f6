package generate

import "pgregory.net/rapid"

// Chooser makes a generator's choices. Every choice is an integer in [lo, hi], and lo is the
// plain one, so that shrinking and inputs that run out lead toward simpler programs. The label
// names what is chosen (rapid's logs, scheduled mode's shrinker).
type Chooser interface {
	Choose(lo, hi int, label string) int
}

// Rapid draws each choice from rapid.
type Rapid struct{ T *rapid.T }

func (c Rapid) Choose(lo, hi int, label string) int { return rapid.IntRange(lo, hi).Draw(c.T, label) }

// Arg reads choices from one byte of input, as mixed-radix digits: each choice takes the
// remainder by its span and leaves the quotient for the next. A FuzzQueue step's argument byte
// is decoded this way, so its first choice is its lowest digit.
type Arg struct{ rest int }

// NewArg returns the chooser of an argument byte.
func NewArg(b byte) *Arg { return &Arg{rest: int(b)} }

func (a *Arg) Choose(lo, hi int, _ string) int {
	span := hi - lo + 1
	if span <= 1 {
		return lo
	}
	v := lo + a.rest%span
	a.rest /= span
	return v
}

// Bool is a choice between false (the plain one) and true.
func Bool(c Chooser, label string) bool { return c.Choose(0, 1, label) == 1 }
