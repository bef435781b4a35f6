package pgqcheck_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgqcheck/internal/testflags"
	"pgqcheck/model"
	"pgqcheck/mutant"
	"pgqcheck/program"
	"pgqcheck/sut"
	"pgqcheck/sut/suttest"
)

// TestPropMutants is the proof that the Prop suite bites. Every mutant that expects "Prop" must
// be caught by a random search from scratch under default rapid settings, with a verdict that
// names a property. Its shortest program is kept in testdata/programs/mutants/<mutant>.ops,
// which TestPropPrograms replays against the mutant (must fail) and the correct queues (must
// pass) on every run.
func TestPropMutants(t *testing.T) {
	ms, err := mutant.Load("testdata/mutants")
	if err != nil {
		t.Fatal(err)
	}
	// A mutant's failure is the expected outcome here, not a regression to keep as a fail file.
	restore := testflags.Force(t, "rapid.nofailfile", "true")
	defer restore()
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
			var v *model.Violation
			if !errors.As(f.Err, &v) {
				t.Fatalf("mutant caught by something other than a property:\n%s", f.Report)
			}
			caught++
			t.Logf("caught in %v by %d operations: %s", time.Since(start).Round(time.Millisecond), len(f.Ops), f.Verdict())
			path := filepath.Join("testdata", "programs", "mutants", m.Name+".ops")
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				if err := f.Program(map[string]string{"mutant": m.Name, "bug": m.Bug}).WriteFile(path); err != nil {
					t.Fatal(err)
				}
				t.Logf("saved %s", path)
			}
		})
	}
	if caught == 0 {
		t.Fatal("no mutant expects Prop: the suite's power is unproven")
	}
}

// TestPropPrograms replays the regression corpus. Every saved program must pass on every queue
// under judgement and on the queue it was found against (a failure found on a queue keeps
// failing `go test` until that queue is fixed); a program that caught a mutant must still
// catch it, with the same property.
func TestPropPrograms(t *testing.T) {
	files, _ := filepath.Glob("testdata/programs/*/*.ops")
	if len(files) == 0 {
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
	ctx := context.Background()
	// Parse everything first, then open one database per queue here, in the test itself (a
	// subtest's cleanup would drop its database under the next program), and close its sessions
	// after the last program that needs it: a server's connection limit must not grow with the
	// corpus.
	type saved struct {
		file   string
		p      *program.Program
		queues []*sut.Queue // must pass
		mutant *mutant.Mutant
	}
	envs := map[string]*program.Env{}
	envFor := func(q *sut.Queue) *program.Env {
		if envs[q.Source] == nil {
			envs[q.Source] = newEnv(t, q)
		}
		return envs[q.Source]
	}
	var corpus []saved
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := program.Parse(string(b))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		s := saved{file: file, p: p, queues: suttest.Queues(t)}
		if ref := p.Header["queue"]; ref != "" {
			q, err := sut.LoadRef(".", ref)
			if err != nil {
				t.Fatalf("%s was found against queue %s, which cannot be loaded (%v): restore the queue, or delete the program if the case no longer matters", file, ref, err)
			}
			s.queues = append(s.queues, q)
		}
		if name := p.Header["mutant"]; name != "" {
			if s.mutant = byName[name]; s.mutant == nil {
				t.Fatalf("%s names mutant %q, which is not in testdata/mutants", file, name)
			}
		}
		corpus = append(corpus, s)
	}
	needs := func(s saved) []*sut.Queue {
		if s.mutant != nil {
			return append(s.queues, s.mutant.Queue)
		}
		return s.queues
	}
	lastUse := map[string]int{}
	for i, s := range corpus {
		for _, q := range needs(s) {
			lastUse[q.Source] = i
		}
	}
	for i, s := range corpus {
		for _, q := range needs(s) {
			envFor(q)
		}
		t.Run(strings.TrimSuffix(filepath.Base(s.file), ".ops"), func(t *testing.T) {
			for _, q := range s.queues {
				env := envs[q.Source]
				if err := program.Replay(ctx, env, s.p.Ops); err != nil {
					t.Errorf("%s fails on %s:\n%s", s.file, q.Source, program.Report(env, err))
				}
			}
			if s.mutant == nil {
				return
			}
			err := program.Replay(ctx, envs[s.mutant.Queue.Source], s.p.Ops)
			var v *model.Violation
			want := s.p.Header["verdict"]
			if !errors.As(err, &v) || !strings.HasPrefix(want, v.Error()[:strings.Index(v.Error(), ")")+1]) {
				t.Fatalf("%s no longer catches %s with %q; replay gave: %v", s.file, s.mutant.Name, want, err)
			}
		})
		for src, last := range lastUse {
			if last == i && envs[src] != nil {
				envs[src].Close()
				delete(envs, src)
			}
		}
	}
}
