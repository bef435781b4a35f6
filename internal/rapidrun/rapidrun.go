// Package rapidrun runs rapid properties outside `go test`: campaigns, the kill table and
// replays check a property under a name, and read what rapid reported instead of failing a test.
package rapidrun

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"pgregory.net/rapid"
)

// Run runs body as a test would run outside `go test`, and returns what it logged and
// whether it failed.
func Run(name string, body func(rapid.TB)) (output string, failed bool) {
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

// Check runs rapid.Check outside `go test` (campaigns, the mutants table), under name as
// a test's name, and returns what rapid reported and whether the property failed.
func Check(name string, prop func(*rapid.T)) (output string, failed bool) {
	return Run(name, func(tb rapid.TB) { rapid.Check(tb, prop) })
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
