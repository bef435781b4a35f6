package program

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"pgregory.net/rapid"
)

// Finding is what a search outside `go test` found, after rapid's shrinking and Reduce.
type Finding struct {
	Name        string // the name the search ran under (rapid's fail files are named after it)
	Err         error  // the reduced program's verdict
	Ops         []Op   // the reduced program
	Report      string // the verdict, the numbered program with the queue's answers, the model
	RapidOutput string // everything rapid reported
}

// Verdict is the one-line verdict: "property N (name): ...".
func (f *Finding) Verdict() string { return strings.SplitN(f.Err.Error(), "\n", 2)[0] }

// Program returns the reduced program with a header saying what it was found against.
func (f *Finding) Program(header map[string]string) *Program {
	h := map[string]string{"verdict": f.Verdict()}
	for k, v := range header {
		h[k] = v
	}
	return &Program{Header: h, Ops: f.Ops}
}

// Search runs the state-machine property against env outside `go test` (campaigns, the
// mutants table), with rapid's usual checks, shrinking and fail files. name becomes the fail
// file's name, as a test name would. It returns nil when every check passed; otherwise the
// failure, reduced further by Reduce.
func Search(ctx context.Context, env *Env, name string, realTime bool) *Finding {
	out, failed := CheckOutside(name, func(t *rapid.T) {
		Begin(ctx, t, env)
		t.Repeat(StateMachine(ctx, env, realTime))
	})
	if !failed {
		return nil
	}
	return Reduced(ctx, env, name, out)
}

// CheckOutside runs rapid.Check outside `go test` (campaigns, the mutants table), under name as
// a test's name (it names rapid's fail files), and returns what rapid reported and whether the
// property failed.
func CheckOutside(name string, prop func(*rapid.T)) (output string, failed bool) {
	return RunOutside(name, func(tb rapid.TB) { rapid.Check(tb, prop) })
}

// RunOutside runs body as a test would run outside `go test`, and returns what it logged and
// whether it failed.
func RunOutside(name string, body func(rapid.TB)) (output string, failed bool) {
	tb := &recorder{name: name}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // FailNow ends this goroutine, as testing.T's does
		defer wg.Done()
		body(tb)
	}()
	wg.Wait()
	return tb.out.String(), tb.Failed()
}

// Reduced reduces the program of env's last run (rapid's final replay of its shrunk case).
func Reduced(ctx context.Context, env *Env, name, rapidOutput string) *Finding {
	ops, err := Reduce(ctx, env, env.Executed())
	if err == nil {
		err = fmt.Errorf("the failure did not reproduce when replayed; rapid said:\n%s", rapidOutput)
	}
	return &Finding{Name: name, Err: err, Ops: ops, Report: Report(env, err), RapidOutput: rapidOutput}
}

// recorder is a rapid.TB that keeps what rapid says instead of failing a test.
type recorder struct {
	name   string
	mu     sync.Mutex
	out    strings.Builder
	failed bool
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(&r.out, format+"\n", args...)
}
func (r *recorder) Log(args ...any)                   { r.Logf("%s", fmt.Sprint(args...)) }
func (r *recorder) Skipf(format string, args ...any)  { r.Logf(format, args...); runtime.Goexit() }
func (r *recorder) Skip(args ...any)                  { r.Log(args...); runtime.Goexit() }
func (r *recorder) SkipNow()                          { runtime.Goexit() }
func (r *recorder) Errorf(format string, args ...any) { r.Logf(format, args...); r.Fail() }
func (r *recorder) Error(args ...any)                 { r.Log(args...); r.Fail() }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); r.FailNow() }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); r.FailNow() }
func (r *recorder) FailNow()                          { r.Fail(); runtime.Goexit() }
func (r *recorder) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
