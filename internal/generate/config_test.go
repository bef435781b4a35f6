package generate

import (
	"slices"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestKindsAreDrawn: every kind of the configuration has a name of its own and is drawn by some
// mode (a weight in a column, or a code in FuzzQueue's encoding); every code names a kind, once,
// and a fuzz step decodes into operations whatever its argument byte.
func TestKindsAreDrawn(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Kinds {
		if seen[k.Name] {
			t.Errorf("kind %s twice", k.Name)
		}
		seen[k.Name] = true
		drawn := slices.Contains(FuzzCodes, k.Name)
		for col := SeqPlain; col <= RealTime; col++ {
			drawn = drawn || k.Weight(col) > 0
		}
		if !drawn {
			t.Errorf("kind %s has no weight in any column and no fuzz code: no mode draws it", k.Name)
		}
	}
	w := program.NewWorld(sut.MustBuiltin(sut.DefaultQueue), program.Reader, program.WorkerName(0), program.WorkerName(1), program.WorkerName(2), program.LockerName(0), program.LockerName(1))
	w.Jobs = []int64{1, 2}
	for i, name := range FuzzCodes {
		if slices.Index(FuzzCodes, name) != i {
			t.Errorf("fuzz code %d: %s has code %d already", i, name, slices.Index(FuzzCodes, name))
		}
		k := KindNamed(name)
		if k == nil {
			t.Errorf("fuzz code %d names no kind %q", i, name)
			continue
		}
		for b := range 256 {
			if ops := k.Draw(&Draw{C: NewArg(byte(b)), Dialect: DialectFuzz, W: w}); len(ops) == 0 {
				t.Fatalf("fuzz code %d (%s), argument %d: no operation", i, name, b)
			}
		}
	}
}

// TestArgDigits: an argument byte's choices are its mixed-radix digits, lowest first.
func TestArgDigits(t *testing.T) {
	a := NewArg(2 + 3*1 + 3*4*2) // digits 2 (of 3), 1 (of 4), 2 (of 3)
	if got := []int{a.Choose(0, 2, ""), a.Choose(0, 3, ""), a.Choose(0, 2, ""), a.Choose(5, 5, ""), a.Choose(0, 9, "")}; !slices.Equal(got, []int{2, 1, 2, 5, 0}) {
		t.Errorf("digits %v, want [2 1 2 5 0]", got)
	}
}
