package schedule

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// whole is a drawn program with all its suffixes, each a list of drawn operations (one or a
// few program operations each).
type whole struct {
	d        *drawnProgram
	suffixes [][][]program.Op
}

func (w whole) String() string { return fmt.Sprint(w.d.prefix, w.suffixes) }

// shape is a program's structure: who runs which kind of operation, where. Job ids are left
// out: removing an enqueue may renumber the jobs later choices pick from.
func shape(p whole) (prefix []string, suffixes [][]string) {
	kind := func(op program.Op) string { return fmt.Sprintf("%T", op) }
	for _, op := range p.d.prefix {
		prefix = append(prefix, op.(interface{ String() string }).String()[:2]+":"+kind(op))
	}
	for _, s := range p.suffixes {
		var ops []string
		for _, drawn := range s {
			var kinds []string
			for _, o := range drawn {
				kinds = append(kinds, kind(o))
			}
			ops = append(ops, strings.Join(kinds, "+"))
		}
		suffixes = append(suffixes, ops)
	}
	return prefix, suffixes
}

// drawWhole draws a program and all its suffixes, session by session.
func drawWhole(c chooser, cfg Config) whole {
	p := whole{d: drawProgram(c, cfg, model.Can{Lock: true})}
	for s, n := range p.d.suffixLengths {
		var ops [][]program.Op
		for i := 0; i < n; i++ {
			ops = append(ops, p.d.next(c, s))
		}
		p.suffixes = append(p.suffixes, ops)
	}
	return p
}

// TestOpRemovals: each input opRemovals proposes is the same program with exactly one
// operation fewer, a prefix operation or one of a session's, and every removable operation
// has its candidate.
func TestOpRemovals(t *testing.T) {
	cfg := Config{Sessions: 3, MaxPrefix: 5, MaxSuffix: 5}
	rapid.Check(t, func(t *rapid.T) {
		rc := &rapidChoices{t: t}
		p := drawWhole(rc, cfg)
		prefix, suffixes := shape(p)
		drawnPrefix := 0
		for _, m := range rc.log().marks {
			if m.label == labelPrefixCount {
				drawnPrefix = m.u
			}
		}
		want := drawnPrefix
		for _, s := range suffixes {
			if len(s) > 1 {
				want += len(s)
			}
		}
		cands := opRemovals(rc.log().bytes, rc.log().marks)
		if len(cands) != want {
			t.Fatalf("%d candidates, want %d (prefix ops %d, suffixes %v)", len(cands), want, drawnPrefix, suffixes)
		}
		for _, d := range cands {
			q := drawWhole(&byteChoices{data: d}, cfg)
			qp, qs := shape(q)
			samePrefix, sameSuffixes := slices.Equal(prefix, qp), slices.EqualFunc(suffixes, qs, slices.Equal)
			if !(oneFewer(prefix, qp) && sameSuffixes) && !(samePrefix && oneSuffixFewer(suffixes, qs)) {
				t.Fatalf("candidate %x is not one operation fewer:\n%s\nfrom\n%s", d, q, p)
			}
		}
	})
}

// oneFewer reports whether b is a with one element removed.
func oneFewer(a, b []string) bool {
	if len(b) != len(a)-1 {
		return false
	}
	for i := range a {
		if slices.Equal(slices.Delete(slices.Clone(a), i, i+1), b) {
			return true
		}
	}
	return false
}

func oneSuffixFewer(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	diff := 0
	for i := range a {
		switch {
		case slices.Equal(a[i], b[i]):
		case oneFewer(a[i], b[i]):
			diff++
		default:
			return false
		}
	}
	return diff == 1
}
