package schedule

import (
	"testing"

	"pgregory.net/rapid"
)

// TestChoicesReplay pins what FuzzScheduled's corpus depends on: the bytes recorded from
// rapid's choices, read back as input, make the same choices, whatever the ranges.
func TestChoicesReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		type rng struct{ lo, hi int }
		ranges := rapid.SliceOf(rapid.Custom(func(t *rapid.T) rng {
			lo := rapid.IntRange(-3, 5).Draw(t, "lo")
			return rng{lo, lo + rapid.IntRange(0, 700).Draw(t, "span")}
		})).Draw(t, "ranges")
		drawn := &rapidChoices{t: t}
		var want []int
		for _, r := range ranges {
			want = append(want, drawn.Choose(r.lo, r.hi, "v"))
		}
		read := &byteChoices{data: drawn.log().bytes}
		for i, r := range ranges {
			if got := read.Choose(r.lo, r.hi, "v"); got != want[i] {
				t.Fatalf("choice %d in [%d, %d]: replayed %d, drawn %d", i, r.lo, r.hi, got, want[i])
			}
		}
		if string(read.log().bytes) != string(drawn.log().bytes) {
			t.Fatalf("replay recorded %x, rapid %x", read.log().bytes, drawn.log().bytes)
		}
	})
}

// TestChoicesPastTheEnd: an input that runs out makes every later choice the plain one.
func TestChoicesPastTheEnd(t *testing.T) {
	c := &byteChoices{data: []byte{7}}
	if v := c.Choose(0, 3, "a"); v != 3 {
		t.Errorf("7 in [0, 3] chose %d, want 3", v)
	}
	for _, r := range [][2]int{{0, 7}, {1, 5}, {2, 3}, {0, 1000}} {
		if v := c.Choose(r[0], r[1], "b"); v != r[0] {
			t.Errorf("past the end, [%d, %d] chose %d, want %d", r[0], r[1], v, r[0])
		}
	}
}
