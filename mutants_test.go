package pgqcheck_test

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"pgqcheck/mutant"
	"pgqcheck/program"
)

// TestPropMutants is the proof that the Prop suite bites: every mutant that expects "Prop" must
// be caught under default rapid settings, and the failure must name a property.
func TestPropMutants(t *testing.T) {
	ms, err := mutant.Load("testdata/mutants")
	if err != nil {
		t.Fatal(err)
	}
	// Fail files from mutants would be replayed against the correct queues' tests by name
	// pattern; a mutant's failure is the expected outcome here, not a regression to keep.
	defer setFlag(t, "rapid.nofailfile", "true")()
	caught := 0
	for _, m := range ms {
		if !m.Expects("Prop") {
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			env := newEnv(t, m.Queue)
			start := time.Now()
			f := program.Search(context.Background(), env, t.Name(), false)
			if f == nil {
				t.Fatalf("mutant survived: %s", m.Bug)
			}
			if !strings.HasPrefix(f.Verdict(), "property ") {
				t.Fatalf("mutant caught by something other than a property: %s\n%s", f.Verdict(), f.Output)
			}
			caught++
			t.Logf("caught in %v: %s", time.Since(start).Round(time.Millisecond), f.Verdict())
		})
	}
	if caught == 0 {
		t.Fatal("no mutant expects Prop: the suite's power is unproven")
	}
}

func setFlag(t *testing.T, name, value string) (restore func()) {
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("no flag %s", name)
	}
	old := f.Value.String()
	if err := f.Value.Set(value); err != nil {
		t.Fatal(err)
	}
	return func() { _ = f.Value.Set(old) }
}
