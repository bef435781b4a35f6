package history

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/dbtime"
	"github.com/pgqcheck/pgqcheck/model"
)

// Recorder collects a history from many goroutines on one clock.
type Recorder struct {
	base    time.Time
	logical bool
	last    atomic.Int64
	// DB is the run's database time: every operation's window is counted from its origin.
	DB *dbtime.Clock

	mu       sync.Mutex
	ops      []Op
	faults   []Fault
	findings []*model.Violation
	waits    []string
	clients  int
}

// NewRecorder starts a history. A logical recorder's clock is an event counter, so that the
// same sequence of events always gets the same timestamps (scheduled mode); otherwise it is
// monotonic nanoseconds since the recorder started.
func NewRecorder(logical bool) *Recorder {
	return &Recorder{base: time.Now(), logical: logical, DB: &dbtime.Clock{}}
}

// Now returns a timestamp strictly greater than every one returned before, so that a call is
// always strictly before its return and distinct events never tie.
func (r *Recorder) Now() int64 {
	for {
		last := r.last.Load()
		t := last + 1
		if !r.logical {
			t = max(t, time.Since(r.base).Nanoseconds())
		}
		if r.last.CompareAndSwap(last, t) {
			return t
		}
	}
}

// NewClient returns a fresh client id. Porcupine ids are dense and zero-based.
func (r *Recorder) NewClient() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clients++
	return r.clients - 1
}

// Add records a finished operation. A return at or before the call, or a window that opens at
// Never, is a bug in the harness, and porcupine would silently call such a history illegal, so
// it stops the run instead.
func (r *Recorder) Add(op Op) {
	if op.Return <= op.Call {
		panic(fmt.Sprintf("history: %s by %s returned at %d, not after its call at %d", model.DescribeOp(op.Input, op.Output), op.Session, op.Return, op.Call))
	}
	if op.Return == Never && op.Output.Outcome != model.Unknown {
		panic(fmt.Sprintf("history: %s by %s never returned but its outcome is not marked unknown", model.DescribeOp(op.Input, op.Output), op.Session))
	}
	// No statement runs at Never: a window that opens there was counted from no origin, and
	// would make whatever the statement did impossible.
	if op.Input.At.From == model.Never {
		panic(fmt.Sprintf("history: %s by %s ran in %s, a window that opens at never", model.DescribeOp(op.Input, op.Output), op.Session, op.Input.At))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
}

// Fault records a fault the harness injected.
func (r *Recorder) Fault(kind, target string) {
	at := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, Fault{At: at, Kind: kind, Target: target})
}

// EndFault closes the window of the latest fault of that kind on that target: it lasted until
// now (a crash, until the restarted server answers).
func (r *Recorder) EndFault(kind, target string) {
	at := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.faults) - 1; i >= 0; i-- {
		if f := &r.faults[i]; f.Kind == kind && f.Target == target {
			f.Until = at
			return
		}
	}
}

// Finding records a violation seen directly. The first of each distinct text is kept.
func (r *Recorder) Finding(v *model.Violation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.findings {
		if f.Error() == v.Error() {
			return
		}
	}
	r.findings = append(r.findings, v)
}

// ClaimWaited records a claim seen waiting behind an injected row lock.
func (r *Recorder) ClaimWaited(desc string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waits = append(r.waits, desc)
}

// Len is the number of operations recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// History returns what was recorded, operations in the order they were added.
func (r *Recorder) History(queue, mode string) *History {
	r.mu.Lock()
	defer r.mu.Unlock()
	clock := "ns"
	if r.logical {
		clock = "logical"
	}
	return &History{
		Version:  Version,
		Queue:    queue,
		Mode:     mode,
		Clock:    clock,
		Findings: append([]*model.Violation(nil), r.findings...),
		Waits:    append([]string(nil), r.waits...),
		Ops:      append([]Op(nil), r.ops...),
		Faults:   append([]Fault(nil), r.faults...),
	}
}
