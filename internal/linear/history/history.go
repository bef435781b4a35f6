// Package history holds what a concurrent run recorded: each session's operations on one
// clock, the faults the harness injected, and what was seen directly while running. A History
// is self-contained and pure data: it saves to JSON and loads back, converts to porcupine's
// operations, and every check reads it and nothing else. The Recorder collects one from many
// goroutines.
package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/anishathalye/porcupine"

	"github.com/pgqcheck/pgqcheck/model"
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

// Version is the history format this package writes and reads.
const Version = 1

// The faults of a crash round, as a history's Faults name them.
const (
	FaultCrash   = "crash"
	FaultRestart = "restart"
	CrashTarget  = "server" // what they befall: every session at once
)

// DrainSession names the session that drains a stress run's queue at its end: where its
// operations begin, every lease has been expired.
const DrainSession = "drain"

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
	if h.Version != Version {
		return nil, fmt.Errorf("%s: history version %d, this checker reads version %d", path, h.Version, Version)
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
