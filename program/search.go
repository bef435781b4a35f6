package program

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"pgregory.net/rapid"

	"pgqcheck/internal/textfmt"
	"pgqcheck/model"
)

// FindingOf turns the failing run env holds (rapid's final replay of its shrunk case) into a
// Finding, after reducing its program within budget. It returns nil when the failure is the
// harness's rather than the queue's.
func FindingOf(ctx context.Context, env *Env, budget time.Duration) *Finding {
	ops, err := ReduceSequential(ctx, env, env.Executed(), budget)
	f := &Finding{Queue: env.In.Queue.Name, Source: env.In.Queue.Source, Mode: Sequential}
	var v *model.Violation
	switch {
	case errors.As(err, &v):
	case errors.As(env.Last, &v):
		// The reduced replay did not fail again: keep what rapid saw, marked as flaky.
		f.Flaky = true
	default:
		return nil
	}
	f.Violation = v
	f.Program = &Program{Header: map[string]string{}, Ops: ops}
	f.Program.SetVerdict(v)
	f.Trace = env.Program()
	f.Model = env.Model.String()
	return f
}

// Search runs the Prop property on env outside `go test` (campaigns, the mutants' tests), with
// rapid's usual checks and shrinking, then reduces the failure within reduce. It returns nil
// when every check passed, an error when the harness rather than the queue failed.
func Search(ctx context.Context, env *Env, name string, realTime bool, reduce time.Duration) (*Finding, error) {
	runs, firstFailure := 0, 0
	var first *Finding
	out, failed := CheckOutside(name, func(t *rapid.T) {
		runs++
		returned := false
		defer func() {
			if !returned && firstFailure == 0 {
				firstFailure, first = runs, Unreduced(env)
			}
		}()
		BeginRun(ctx, t, env)
		t.Repeat(StateMachine(ctx, env, realTime))
		returned = true
	})
	if !failed {
		return nil, nil
	}
	f := FindingOf(ctx, env, reduce)
	if f == nil && first != nil {
		// rapid's replay failed otherwise, or not at all (real time: which check lands first
		// past a lease's edge depends on the run's own timing). What the first run saw is a
		// broken promise all the same: the model judges only by measured windows.
		f = first
		f.Flaky = true
	}
	if f != nil {
		f.Checks = firstFailure
		return f, nil
	}
	return nil, fmt.Errorf("harness: %s", textfmt.OneLine(out))
}

// Unreduced is the failing run env holds, as it ran: nil when it broke no property.
func Unreduced(env *Env) *Finding {
	var v *model.Violation
	if !errors.As(env.Last, &v) {
		return nil
	}
	p := &Program{Header: map[string]string{}, Ops: env.Executed()}
	p.SetVerdict(v)
	return &Finding{Violation: v, Queue: env.In.Queue.Name, Source: env.In.Queue.Source, Mode: Sequential,
		Program: p, Trace: env.Program(), Model: env.Model.String()}
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

// CheckOutside runs rapid.Check outside `go test` (campaigns, the mutants table), under name as
// a test's name, and returns what rapid reported and whether the property failed.
func CheckOutside(name string, prop func(*rapid.T)) (output string, failed bool) {
	return RunOutside(name, func(tb rapid.TB) { rapid.Check(tb, prop) })
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
