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

// Search runs the Prop property on env outside `go test` (the mutants' tests), with rapid's
// usual checks and shrinking, then reduces the failure within reduce. It returns nil when every
// check passed, an error when the harness rather than the queue failed.
func Search(ctx context.Context, env *Env, name string, realTime bool, reduce time.Duration) (*Finding, error) {
	s := NewSeqSearch(env, realTime)
	out, failed := CheckOutside(name, func(t *rapid.T) { s.Run(ctx, t, nil) })
	if !failed {
		return nil, nil
	}
	if f := s.Finding(ctx, reduce); f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("harness: %s", textfmt.OneLine(out))
}

// SeqSearch is one search of the Prop state machine on an Env under rapid: the property rapid
// checks, run after run, and what it kept of the first run that failed, for when rapid's replay
// of its shrunk case does not fail again.
type SeqSearch struct {
	env      *Env
	realTime bool
	runs     int
	failedAt int      // the first failing run, counted from 1; 0 while every run passed
	firstOps []Op     // that run's operations
	first    *Finding // what that run broke, unreduced; nil when it failed in the harness
}

// NewSeqSearch prepares a search on env, with leases that end by themselves and real pauses
// (property 8) when realTime is set.
func NewSeqSearch(env *Env, realTime bool) *SeqSearch {
	return &SeqSearch{env: env, realTime: realTime}
}

// Run is one run of the property: the queue reset, then the state machine. wrap, when not nil,
// wraps each of the machine's actions (a campaign counts their operations with it).
func (s *SeqSearch) Run(ctx context.Context, t *rapid.T, wrap func(action func(*rapid.T)) func(*rapid.T)) {
	s.runs++
	completed := false
	defer func() {
		if !completed && s.failedAt == 0 {
			s.failedAt, s.firstOps, s.first = s.runs, s.env.Executed(), Unreduced(s.env)
		}
	}()
	BeginRun(ctx, t, s.env)
	actions := StateMachine(ctx, s.env, s.realTime)
	if wrap != nil {
		for key, action := range actions {
			if key != "" { // rapid's check after every action
				actions[key] = wrap(action)
			}
		}
	}
	t.Repeat(actions)
	completed = true
}

// Finding is the failure of a search whose property failed, its program reduced within reduce:
// rapid's shrunk case (env holds its final replay). When that one's replay does not fail again,
// it is the first failing run, replayed and reduced, or else as it ran: real time decides which
// check lands first past a lease's edge, and what the first run saw is a broken promise all the
// same, since the model judges only by measured windows. Those are marked Flaky. Finding is nil
// when no run broke a property: the harness failed (env.Last says how when it was the last run).
func (s *SeqSearch) Finding(ctx context.Context, reduce time.Duration) *Finding {
	env := s.env
	f := FindingOf(ctx, env, reduce)
	if (f == nil || f.Flaky) && s.firstOps != nil {
		_ = Replay(ctx, env, s.firstOps)
		if g := FindingOf(ctx, env, reduce); g != nil {
			f = g
			f.Flaky = true
		}
	}
	if f == nil && s.first != nil {
		f = s.first
		f.Flaky = true
	}
	if f != nil {
		f.Checks = s.failedAt
	}
	return f
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
