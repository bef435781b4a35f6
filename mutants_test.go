package pgqcheck_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/suite"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/testflags"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// propMutants are the mutants a Prop state machine must catch: Prop's, and PropLeaseTime's,
// which it catches with real-time leases. No fail file is written while the test runs: a
// mutant's failure is the expected outcome, not a regression to keep.
func propMutants(tb testing.TB) []*mutant.Mutant {
	tb.Helper()
	ms, err := mutant.Load("testdata/mutants")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(testflags.Force(tb, "rapid.nofailfile", "true"))
	var out []*mutant.Mutant
	for _, m := range ms {
		if m.Expects("Prop") || m.Expects("PropLeaseTime") {
			out = append(out, m)
		}
	}
	return out
}

// TestMutantPrograms keeps the mutants' part of the corpus whole: every mutant the Prop suite
// (or PropLeaseTime, with real-time leases) must catch has its shortest program in testdata/programs/mutants/<mutant>.ops, which
// TestPropPrograms replays against the mutant (must fail with the property its header names)
// and against the queues under judgement (must pass). A missing one is found by a search from
// scratch, shrunk and reduced, and written. (That every mutant is caught at all is TestMutants'
// kill table.)
func TestMutantPrograms(t *testing.T) {
	suttest.SelfCheck(t, ".")
	for _, m := range propMutants(t) {
		realTime := m.Expects("PropLeaseTime")
		path := filepath.Join(corpus.Dir, "mutants", m.Name+".ops")
		if p, err := program.ReadFile(path); err == nil {
			if _, ok := p.Property(); !ok || p.Header[program.HeaderMutant] != m.Name {
				t.Errorf("%s must name mutant %s and the property it breaks in its header", path, m.Name)
			}
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v", path, err)
			continue
		}
		t.Run(m.Name, func(t *testing.T) {
			start := time.Now()
			f := suite.Find(t, m.Queue, suites(), realTime)
			if f == nil {
				t.Fatalf("mutant survived: %s", m.Bug)
			}
			t.Logf("caught in %v by %d operations: %s", time.Since(start).Round(time.Millisecond), len(f.Program.Ops), f.Verdict())
			p := &program.Program{Header: map[string]string{program.HeaderMutant: m.Name, program.HeaderBug: m.Bug}, Ops: f.Program.Ops}
			p.SetVerdict(f.Violation)
			if err := p.WriteFile(path); err != nil {
				t.Fatal(err)
			}
			t.Logf("saved %s", path)
		})
	}
}

// TestPropPrograms replays the regression corpus against every queue under judgement: every
// saved program must pass on it. A program found on some queue keeps failing `go test` for as
// long as the queue being judged still has that bug; the queue it was found on is only
// information. A program that caught a mutant must still catch it, with the same property.
func TestPropPrograms(t *testing.T) {
	// Replays read no rapid flag: this runs beside the kill table, every queue and every
	// mutant's case in a database of its own.
	t.Parallel()
	cases, err := corpus.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no saved programs under testdata/programs: the corpus is missing")
	}
	ms, err := mutant.Load("testdata/mutants")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mutant.Mutant{}
	for _, m := range ms {
		byName[m.Name] = m
	}
	for _, c := range cases {
		if name := c.Mutant(); name != "" && byName[name] == nil {
			t.Fatalf("%s names mutant %q, which is not in testdata/mutants", c.Path, name)
		}
	}
	for _, q := range suttest.Queues(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			suite.Programs(t, q, suites(), cases)
		})
	}
	t.Run("mutants", func(t *testing.T) {
		suttest.SelfCheck(t, ".")
		for _, c := range cases {
			m := byName[c.Mutant()]
			if m == nil {
				continue
			}
			t.Run(c.Name(), func(t *testing.T) {
				t.Parallel()
				want, ok := c.Program.Property()
				if !ok {
					t.Fatalf("%s has no %q header naming the property it breaks", c.Path, program.HeaderProperty)
				}
				replayCatch(t, m, c, want)
			})
		}
	})
}

// replayCatch requires c's program to catch m with want. A catch that rests on real time gets
// m.Replays() replays in which every statement after a pause to a lease's edge landed where the
// pause aimed it: a replay whose statement the machine's load carried past the edge tested
// nothing, and up to twice as many again make up for those. The replays share one runner, so
// each pause learns from the last how late its statement lands.
func replayCatch(t *testing.T, m *mutant.Mutant, c *corpus.Case, want model.Property) {
	t.Helper()
	r := &corpus.Replayer{In: suttest.Install(t, m.Queue), ReportDir: t.TempDir()}
	defer r.Close()
	var f *verdict.Finding
	tries, aimed := 0, 0
	for aimed < m.Replays() && tries < 3*m.Replays() {
		tries++
		var err error
		if f, err = r.Replay(context.Background(), c.Program); err != nil {
			t.Fatalf("%s: %v", c.Path, err)
		}
		if f != nil && f.Property() == want {
			if tries > 1 {
				t.Logf("%s caught %s on replay %d; the replays before it did not (a catch that rests on real time)", c.Path, m.Name, tries)
			}
			return
		}
		if landedAsAimed(r.Landings()) {
			aimed++
		}
	}
	t.Fatalf("%s no longer catches %s with %s: %d replays, %d of them landed where their pauses aimed; the last gave %v, its trace:\n%s", c.Path, m.Name, want, tries, aimed, f, r.Trace())
}

func landedAsAimed(ls []program.Landing) bool {
	for _, l := range ls {
		if !l.Aimed() {
			return false
		}
	}
	return true
}

func replayOn(t *testing.T, q *sut.Queue, c *corpus.Case) *verdict.Finding {
	t.Helper()
	r := &corpus.Replayer{In: suttest.Install(t, q), ReportDir: t.TempDir()}
	defer r.Close()
	f, err := r.Replay(context.Background(), c.Program)
	if err != nil {
		t.Fatalf("%s: %v", c.Path, err)
	}
	return f
}

// TestCorpusJudgesTheQueueUnderTest is the regression test for a found program's target: a
// program found on a buggy queue Y must not fail the verdict on a correct queue X, and must
// fail the verdict on any queue that still has Y's bug, wherever that queue's folder is.
func TestCorpusJudgesTheQueueUnderTest(t *testing.T) {
	suttest.SelfCheck(t, ".")
	buggy := suttest.Mutant(t, "complete-ignores-generation").Queue
	// The mutant's failure is expected: it is no regression to keep as a fail file.
	defer testflags.Force(t, "rapid.nofailfile", "true")()
	f := suite.Find(t, buggy, suites(), false)
	if f == nil {
		t.Fatal("the search did not catch the mutant")
	}
	root := t.TempDir()
	path, _, err := corpus.Save(root, f, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	cases, err := corpus.Load(root)
	if err != nil || len(cases) != 1 || cases[0].Path != path {
		t.Fatalf("the saved program did not load back: %v %v", cases, err)
	}
	if g := replayOn(t, sut.MustBuiltin(sut.DefaultQueue), cases[0]); g != nil {
		t.Fatalf("a program found on %s fails the correct seed queue:\n%s", buggy.Source, g)
	}
	// The same buggy SQL in a folder of another name: the bug, not the folder, is judged.
	moved := t.TempDir()
	copyDir(t, buggy.Dir(), moved)
	again, err := sut.LoadDir(moved)
	if err != nil {
		t.Fatal(err)
	}
	if g := replayOn(t, again, cases[0]); g == nil || g.Property() != f.Property() {
		t.Fatalf("a program found on %s does not fail the same bug in %s: %v", buggy.Source, moved, g)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
