package pgqcheck_test

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"pgqcheck/model"
	"pgqcheck/mutant"
	"pgqcheck/program"
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
	restore := setFlag(t, "rapid.nofailfile", "true")
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
				if err := writeProgram(path, f.Program(map[string]string{"mutant": m.Name, "bug": m.Bug})); err != nil {
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

// TestPropPrograms replays the regression corpus: every saved program must pass on every queue
// under judgement; a program that caught a mutant must still catch it, with the same property.
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
	var envs []*program.Env
	for _, q := range suttest.Queues(t) {
		envs = append(envs, newEnv(t, q))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".ops"), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := program.Parse(string(b))
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			for _, env := range envs {
				if err := program.Replay(ctx, env, p.Ops); err != nil {
					t.Errorf("%s fails on %s:\n%s", file, env.In.Queue.Source, program.Report(env, err))
				}
			}
			name := p.Header["mutant"]
			if name == "" {
				return
			}
			m := byName[name]
			if m == nil {
				t.Fatalf("%s names mutant %q, which is not in testdata/mutants", file, name)
			}
			env := newEnv(t, m.Queue)
			err = program.Replay(ctx, env, p.Ops)
			var v *model.Violation
			if !errors.As(err, &v) || !strings.HasPrefix(p.Header["verdict"], v.Error()[:strings.Index(v.Error(), ")")+1]) {
				t.Fatalf("%s no longer catches %s with %q; replay gave: %v", file, name, p.Header["verdict"], err)
			}
		})
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
