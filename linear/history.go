package linear

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"pgqcheck/sut"

	"github.com/anishathalye/porcupine"

	"pgqcheck/model"
)

// Never is the return time of an operation whose outcome is unknown: it may take effect at
// any instant after its call, so its interval never closes.
const Never int64 = math.MaxInt64

// Op is one recorded operation: who asked, what, when, and what came back.
type Op struct {
	Client  int          `json:"client"`  // one client per session lifetime; a new one after an unknown outcome
	Session string       `json:"session"` // the session's name, for people
	Input   model.Input  `json:"input"`
	Output  model.Output `json:"output"`
	Call    int64        `json:"call"`   // on the history's clock, strictly before Return
	Return  int64        `json:"return"` // Never when the outcome is unknown
}

// Fault is something the harness did to a session that is not a queue operation (a cancel, a
// termination). Faults are shown on the timelines. Until is when a fault that lasts (a delay,
// a stall) ended; an instant one leaves it 0.
type Fault struct {
	At     int64  `json:"at"`
	Until  int64  `json:"until,omitempty"`
	Kind   string `json:"kind"`
	Target string `json:"target"`
}

// History is everything a run recorded. It is self-contained: the checks need nothing else.
type History struct {
	Version int    `json:"version"`
	Queue   string `json:"queue"` // where the queue's SQL came from
	Mode    string `json:"mode"`  // stress, scheduled, simulated, handmade
	// Shape is what the queue declared about itself (no generation, done rows deleted, ...),
	// which the checks judge by; zero for the seed's shape.
	Shape   model.Shape `json:"shape,omitempty"`
	Clock   string      `json:"clock"`             // "ns" (monotonic nanoseconds) or "logical" (event counter)
	Program string      `json:"program,omitempty"` // scheduled mode: the drawn program and interleaving
	// Drained: the run ended by expiring every lease and draining the queue, and the last
	// snapshot in the history was taken afterwards, so the accounting check applies.
	Drained bool `json:"drained"`
	// Findings are violations seen directly while running (an unexpected error, a claim that
	// waited for a row lock, a claim that returned two rows), not derived from the operations.
	Findings []*model.Violation `json:"findings,omitempty"`
	// Waits are claims seen waiting behind the chaos locker's row lock. A wait behind a fault the
	// suite injected is exempt (property 9), so these are observations, reported, not verdicts;
	// the deterministic modes (Prop, scheduled) judge skip-don't-wait strictly.
	Waits []string `json:"waits,omitempty"`
	// Expect is set on histories saved under testdata: "ok", or "property N" for a history the
	// checker must keep rejecting for that property.
	Expect string  `json:"expect,omitempty"`
	Ops    []Op    `json:"ops,omitempty"`
	Faults []Fault `json:"faults,omitempty"`
}

const historyVersion = 1

// Load reads a history saved as JSON.
func Load(path string) (*History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%s: not a history: %v", path, err)
	}
	if h.Version != historyVersion {
		return nil, fmt.Errorf("%s: history version %d, this checker reads version %d", path, h.Version, historyVersion)
	}
	return &h, nil
}

// Save writes the history as JSON, one operation per line, so that saved histories stay
// small and diff well.
func (h *History) Save(path string) error {
	head := *h
	head.Ops, head.Faults = nil, nil
	b, err := marshal(head)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for _, list := range []struct {
		name  string
		items []any
	}{{"faults", anySlice(h.Faults)}, {"ops", anySlice(h.Ops)}} {
		fmt.Fprintf(&buf, ",\n%q: [", list.name)
		for i, item := range list.items {
			line, err := marshal(item)
			if err != nil {
				return err
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString("\n ")
			buf.Write(line)
		}
		buf.WriteString("\n]")
	}
	buf.WriteString("}\n")
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// marshal is json.Marshal without HTML escaping: histories are read by people, and "->"
// should stay "->".
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func anySlice[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// Porcupine converts the history to porcupine's operations. Metadata carries the session name.
func (h *History) Porcupine() []porcupine.Operation {
	out := make([]porcupine.Operation, len(h.Ops))
	for i, o := range h.Ops {
		out[i] = porcupine.Operation{ClientId: o.Client, Input: o.Input, Output: o.Output, Call: o.Call, Return: o.Return, Metadata: o.Session}
	}
	return out
}

// Recorder collects a history from many goroutines on one clock.
type Recorder struct {
	base    time.Time
	logical bool
	last    atomic.Int64
	// DB is the run's database time: every operation's window is counted from its origin.
	DB *sut.DBClock

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
	return &Recorder{base: time.Now(), logical: logical, DB: &sut.DBClock{}}
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

// Add records a finished operation. A return at or before the call is a bug in the harness,
// and porcupine would silently call such a history illegal, so it stops the run instead.
func (r *Recorder) Add(op Op) {
	if op.Return <= op.Call {
		panic(fmt.Sprintf("linear: %s by %s returned at %d, not after its call at %d", model.DescribeOp(op.Input, op.Output), op.Session, op.Return, op.Call))
	}
	if op.Return == Never && op.Output.Outcome != model.Unknown {
		panic(fmt.Sprintf("linear: %s by %s never returned but its outcome is not marked unknown", model.DescribeOp(op.Input, op.Output), op.Session))
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

// Wait records a claim seen waiting behind an injected row lock.
func (r *Recorder) Wait(desc string) {
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
		Version:  historyVersion,
		Queue:    queue,
		Mode:     mode,
		Clock:    clock,
		Findings: append([]*model.Violation(nil), r.findings...),
		Waits:    append([]string(nil), r.waits...),
		Ops:      append([]Op(nil), r.ops...),
		Faults:   append([]Fault(nil), r.faults...),
	}
}
