package program

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"pgregory.net/rapid"
)

// Finding is what a search outside `go test` found: rapid's shrunk failure text.
type Finding struct {
	Name   string // the name the search ran under (rapid's fail files are named after it)
	Output string // everything rapid reported, the shrunk program included
}

// Verdict returns the first line of the shrunk failure: "property N (name): ...".
func (f *Finding) Verdict() string {
	for _, l := range strings.Split(f.Output, "\n") {
		if i := strings.Index(l, "property "); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	for _, l := range strings.Split(f.Output, "\n") {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "[rapid]") {
			return s
		}
	}
	return "failed"
}

// Search runs the state-machine property against env outside `go test` (campaigns, the
// mutants table), with rapid's usual checks, shrinking and fail files. name becomes the fail
// file's name, as a test name would. It returns nil when every check passed.
func Search(ctx context.Context, env *Env, name string, realTime bool) *Finding {
	tb := &recorder{name: name}
	prop := func(t *rapid.T) {
		if err := env.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		t.Repeat(StateMachine(ctx, env, realTime))
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // FailNow ends this goroutine, as testing.T's does
		defer wg.Done()
		rapid.Check(tb, prop)
	}()
	wg.Wait()
	if !tb.Failed() {
		return nil
	}
	return &Finding{Name: name, Output: tb.out.String()}
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
