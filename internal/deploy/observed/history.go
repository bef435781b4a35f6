// Package observed turns what a deployment run saw (its workers' events, the harness's own
// enqueues and snapshots) into the history the checks of every other mode read
// (internal/linear/history), and holds the checks that only observed executions need.
//
// Every time in a deployment history is database time: a worker's events carry
// clock_timestamp() readings taken on its own connection, and the harness's statements are
// timed the same way, so one server's clock orders every operation of every process. An
// operation's call and return on the history's clock are the readings just before and after
// it, counted in nanoseconds from the run's first reading, and its window of database time is
// the same span; the checks then judge leases on those windows as in every other mode.
package observed

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Mode is a deployment history's mode, as the history and its findings name it.
const Mode = "deploy"

// Builder collects a deployment run's operations into one history.
type Builder struct {
	// Origin is the run's first reading of the database clock: every window counts from it.
	Origin time.Time
	// Lease is the lease each claim asked for (or the horizon past which the queue may take a
	// job from a worker that holds it).
	Lease time.Duration
	// TxBound: a claim is the transaction its worker holds open (gue's): an execution that
	// did not finish ends its claim when that transaction ends.
	TxBound bool

	// Effects are the business effects of each job the last snapshot counted (nil: the
	// queue counts none); External, those the run's HTTP destination applied (nil: none was
	// called), which applies every call.
	Effects, External map[int64]int64

	ops      []pending
	ids      map[string]int64 // a queue's own ids, numbered
	keys     map[string]int64 // the workload's keys, by the job their enqueue returned
	faults   []history.Fault
	findings []*model.Violation
	execs    []Execution
}

// pending is an operation before its client is chosen: a session's operations are spread over
// as few porcupine clients as keep each client's operations one after another.
type pending struct {
	op   history.Op
	life string // the worker life (or harness session) it belongs to
}

// Since is a database time as an offset from the origin.
func (b *Builder) Since(t time.Time) time.Duration {
	if t.IsZero() {
		return model.Never
	}
	return t.Sub(b.Origin)
}

// sinceMicros is Since for a time an event carries (0: not read).
func (b *Builder) sinceMicros(us int64) time.Duration {
	if us == 0 {
		return model.Never
	}
	return b.Since(time.UnixMicro(us))
}

// window is the span a statement ran in, from its readings: an unread first reading is
// bounded by floor, an unread last one by nothing.
func window(from, to, floor time.Duration) model.Window {
	w := model.Window{From: from, To: to}
	if from == model.Never {
		w.From = floor
	}
	return w
}

// Add records an operation the harness ran itself (an enqueue, a snapshot's observation) in
// session, with the clock readings around it.
func (b *Builder) Add(session string, in model.Input, out model.Output, clk sut.Clock, floor time.Duration) {
	in.At = window(b.Since(clk.From), b.Since(clk.To), floor)
	if in.At.To == model.Never && out.Outcome == model.Returned {
		out.Outcome = model.Unknown
	}
	b.ops = append(b.ops, pending{op: history.Op{Session: session, Input: in, Output: out}, life: session})
}

// Fault records a fault the harness injected on target (a worker life, or the server) from at
// until until (zero: an instant), both database times.
func (b *Builder) Fault(kind, target string, at, until time.Duration) {
	f := history.Fault{At: int64(at), Kind: kind, Target: target}
	if until > at {
		f.Until = int64(until)
	}
	b.faults = append(b.faults, f)
}

// Finding records a violation seen directly.
func (b *Builder) Finding(v *model.Violation) { b.findings = append(b.findings, v) }

// Worker adds one worker life's events: the statements it reported (each a send and its
// answer; a send without one is an operation whose outcome is unknown) and its executions.
func (b *Builder) Worker(life string, events []protocol.Event) {
	events = apart(b.numbered(events))
	sends := map[int64]protocol.Event{}
	var order []int64
	for _, e := range events {
		switch e.Ev {
		case protocol.EvSend:
			sends[e.Seq] = e
			order = append(order, e.Seq)
		case protocol.EvObserve:
			b.observe(life, e)
		case protocol.EvEffects:
			if b.Effects == nil {
				b.Effects = map[int64]int64{}
			}
			b.Effects[e.Job] = e.Rows
		case protocol.EvAnswer:
			s, ok := sends[e.Seq]
			if !ok {
				b.Finding(model.Violate(model.PNoErrors, "worker %s answered statement %d, which it never reported sending (a worker that breaks the protocol)", life, e.Seq))
				continue
			}
			delete(sends, e.Seq)
			b.statement(life, s, &e)
		}
	}
	claims := false
	for _, seq := range order {
		if s, ok := sends[seq]; ok {
			b.statement(life, s, nil)
		}
	}
	for _, e := range events {
		claims = claims || e.Ev == protocol.EvSend && e.Op == protocol.OpClaim
	}
	execs := executions(life, events)
	if !claims {
		b.claimsOf(life, execs)
	}
	b.execs = append(b.execs, execs...)
}

// apart tells apart a worker's executions of one job that its queue gave the same attempt
// (gue and neoq count failures, so an execution cut short counts nothing): a later one's
// attempt, in its events from its start on, is made unique beyond any attempt a queue gives
// (the suite numbers such a queue's executions itself, so only telling them apart matters).
func apart(events []protocol.Event) []protocol.Event {
	const beyond = 1 << 40
	started := map[[2]int64]int64{}
	current := map[[2]int64]int64{}
	for i, e := range events {
		if e.Job == 0 || e.Gen == 0 && e.Ev != protocol.EvStart {
			continue
		}
		k := [2]int64{e.Job, e.Gen}
		if e.Ev == protocol.EvStart {
			if n := started[k]; n > 0 {
				current[k] = e.Gen + n*beyond
			}
			started[k]++
		}
		if g, ok := current[k]; ok {
			events[i].Gen = g
		}
	}
	return events
}

// claimsOf adds the claims of a worker that reports executions, not its claims (a library
// whose fetch is its own): each execution's claim ran between the time it was handed out
// (the library's attempted_at, else the run's start) and its start. An execution that failed
// or was cancelled ends its claim at an unknown time after its end, as the library's executor
// releases the job (by id, whoever holds it: its write is not fenced).
func (b *Builder) claimsOf(life string, execs []Execution) {
	for _, e := range execs {
		// A start whose clock reading failed is bounded by the end's: the claim came before.
		to := b.sinceMicros(e.Start)
		if to == model.Never {
			to = b.sinceMicros(e.End)
		}
		in := model.Input{Kind: model.OpClaim, Lease: b.Lease, At: window(b.sinceMicros(e.Claimed), to, 0)}
		out := model.Output{Found: true, Job: e.Job, Gen: e.Gen}
		if in.At.To == model.Never {
			out = model.Output{Outcome: model.Unknown}
		}
		b.ops = append(b.ops, pending{op: history.Op{Session: life, Input: in, Output: out}, life: life})
		done := e.End > 0 && (e.Result == protocol.ResultDone || e.Result == protocol.ResultRefused)
		switch {
		case b.TxBound && !done:
			// The claim is its transaction, which ended when the execution did not finish it
			// (its process killed, its connection cut, its commit failed): when, is not known.
			at := model.Window{From: in.At.From, To: model.Never}
			b.ops = append(b.ops, pending{op: history.Op{Session: life, Input: model.Input{Kind: model.OpExpire, Job: e.Job, Gen: e.Gen, At: at},
				Output: model.Output{Outcome: model.Unknown}}, life: life})
		case !b.TxBound && e.End > 0 && (e.Result == protocol.ResultFailed || e.Result == protocol.ResultCancelled):
			at := model.Window{From: window(b.sinceMicros(e.End), model.Never, in.At.From).From, To: model.Never}
			b.ops = append(b.ops, pending{op: history.Op{Session: life, Input: model.Input{Kind: model.OpExpire, Job: e.Job, At: at},
				Output: model.Output{Outcome: model.Unknown}}, life: life})
		}
	}
}

// numbered gives the events that name a job by an id of the queue's own (not a number) the
// job's number: in the order the ids are first seen, so that, the enqueuer's events read
// first, jobs are numbered in enqueue order.
func (b *Builder) numbered(events []protocol.Event) []protocol.Event {
	out := make([]protocol.Event, len(events))
	for i, e := range events {
		if e.Key != "" && e.ID == "" {
			if n, ok := b.keys[e.Key]; ok {
				e.Job = n
			} else {
				e.ID = "key " + e.Key // a job whose enqueue's answer never came: a number of its own
			}
		}
		if e.ID != "" {
			if b.ids == nil {
				b.ids = map[string]int64{}
			}
			n, ok := b.ids[e.ID]
			if !ok {
				n = int64(len(b.ids) + 1)
				b.ids[e.ID] = n
			}
			e.Job = n
		}
		if e.Ev == protocol.EvAnswer && e.Op == protocol.OpEnqueue && e.Job != 0 {
			if b.keys == nil {
				b.keys = map[string]int64{}
			}
			b.keys[keyOf(e)] = e.Job
		}
		out[i] = e
	}
	return out
}

// keyOf is the workload's key an enqueue's answer carries, in its payload or as its key.
func keyOf(e protocol.Event) string {
	if e.Key != "" {
		return e.Key
	}
	var p struct {
		Key string `json:"key"`
	}
	_ = json.Unmarshal([]byte(e.Payload), &p)
	return p.Key
}

// JobOfKey is the job the workload's key names, where its enqueue was acknowledged.
func (b *Builder) JobOfKey(key string) (int64, bool) {
	n, ok := b.keys[key]
	return n, ok
}

// observe adds one job's row as a snapshot read it.
func (b *Builder) observe(life string, e protocol.Event) {
	at := window(b.sinceMicros(e.From), b.sinceMicros(e.To), 0)
	st := model.State(e.State)
	in := model.Input{Kind: model.OpObserve, Job: e.Job, At: at}
	out := model.Output{Found: true, State: st, Gen: e.Gen, Live: e.Live && st == model.Running, Attempts: e.Attempts}
	if at.To == model.Never {
		return // a snapshot whose last reading was lost shows nothing certain
	}
	b.ops = append(b.ops, pending{op: history.Op{Session: life, Input: in, Output: out}, life: life})
}

// statement adds the operation of one send and its answer (nil: none came back).
func (b *Builder) statement(life string, send protocol.Event, ans *protocol.Event) {
	floor := time.Duration(0)
	if send.Floor > 0 {
		floor = b.sinceMicros(send.Floor)
	}
	in := model.Input{Job: send.Job, Gen: send.Gen}
	var out model.Output
	switch send.Op {
	case protocol.OpClaim:
		in = model.Input{Kind: model.OpClaim, Lease: b.Lease}
	case protocol.OpComplete:
		in.Kind = model.OpComplete
	case protocol.OpFail:
		in.Kind = model.OpFail
	case protocol.OpEnqueue:
		in = model.Input{Kind: model.OpEnqueue, Payload: send.Payload, Delay: time.Duration(send.DelayMS) * time.Millisecond}
	default:
		b.Finding(model.Violate(model.PNoErrors, "worker %s reported a statement %q, which the protocol does not know", life, send.Op))
		return
	}
	at := model.Window{From: floor, To: model.Never}
	switch {
	case ans == nil || ans.Lost:
		out.Outcome = model.Unknown
		if ans != nil && ans.From > 0 {
			at.From = b.sinceMicros(ans.From)
		}
	case ans.Unsent:
		out = model.Output{Outcome: model.NotSent, Err: ans.Err}
		at = window(b.sinceMicros(ans.From), b.sinceMicros(ans.To), floor)
		if at.To == model.Never {
			at.To = at.From
		}
	case ans.Err != "" && in.Kind == model.OpClaim && ans.Rows > 1:
		// A claim that returned several rows took them all: its outcome is no single answer.
		out.Outcome = model.Unknown
		at.From = window(b.sinceMicros(ans.From), model.Never, floor).From
		b.Finding(model.Violate(model.PExclusion, "worker %s: a claim returned %d rows; a claim returns at most one job", life, ans.Rows))
	case ans.Err != "":
		// A statement the server refused took no effect (autocommit); property 9 judges it.
		out = model.Output{Outcome: model.Aborted, Err: ans.Err}
		at = window(b.sinceMicros(ans.From), b.sinceMicros(ans.To), floor)
		if at.To == model.Never {
			at.To = at.From
		}
		b.Finding(model.Violate(model.PNoErrors, "worker %s: %s failed: %s", life, send.Op, ans.Err))
	default:
		at = window(b.sinceMicros(ans.From), b.sinceMicros(ans.To), floor)
		out = model.Output{Found: ans.Found, Job: ans.Job, Gen: ans.Gen, Rows: ans.Rows}
		if in.Kind == model.OpClaim && !ans.Found {
			out.Job, out.Gen = 0, 0
		}
		if at.To == model.Never {
			out = model.Output{Outcome: model.Unknown}
		}
	}
	in.At = at
	b.ops = append(b.ops, pending{op: history.Op{Session: life, Input: in, Output: out}, life: life})
}

// History is everything collected, as a history of the queue's shape: operations ordered by
// their call, each life's operations spread over the fewest clients that keep each client's
// one after another (an operation that never returned keeps its client for good).
func (b *Builder) History(queue string, shape model.Shape) *history.History {
	ops := make([]pending, len(b.ops))
	copy(ops, b.ops)
	if shape.NoGeneration {
		b.renumber(ops)
	}
	for i := range ops {
		o := &ops[i].op
		o.Call = int64(o.Input.At.From)
		o.Return = int64(o.Input.At.To)
		if o.Output.Outcome == model.Unknown {
			o.Return = history.Never
		}
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].op.Call < ops[j].op.Call })
	type lane struct {
		client int
		last   int64
	}
	lanes := map[string][]lane{}
	next := 0
	out := make([]history.Op, 0, len(ops))
	for _, p := range ops {
		o := p.op
		if o.Return <= o.Call {
			o.Return = o.Call + 1
		}
		ls := lanes[p.life]
		chosen := -1
		observe := o.Input.Kind == model.OpObserve
		for i, l := range ls {
			// A snapshot's observations share one instant, and its first lane: the checks
			// read each as a point, not as a client's next request.
			if l.last < o.Call || observe {
				chosen = i
				break
			}
		}
		if chosen < 0 {
			ls = append(ls, lane{client: next})
			next++
			chosen = len(ls) - 1
		}
		o.Client = ls[chosen].client
		if !observe {
			ls[chosen].last = o.Return
		}
		lanes[p.life] = ls
		out = append(out, o)
	}
	return &history.History{
		Version:  history.Version,
		Queue:    queue,
		Mode:     Mode,
		Shape:    shape,
		Clock:    "ns",
		Drained:  true,
		Findings: append([]*model.Violation(nil), b.findings...),
		Ops:      out,
		Faults:   append([]history.Fault(nil), b.faults...),
	}
}

// renumber numbers each job's claims in the order their executions began, as the suite numbers
// the claims of a queue that declares no generation counter: the library's own attempt counter
// also counts fetches no handler began (a worker killed with jobs it had fetched), which the
// workers never report. Completions present their execution's number; an observation shows
// how many claims of the job were seen.
func (b *Builder) renumber(ops []pending) {
	type key struct {
		life     string
		job, gen int64
	}
	number := map[key]int64{}
	seen := map[int64]int64{}
	for _, e := range b.Executions() {
		k := key{e.Life, e.Job, e.Gen}
		if _, ok := number[k]; !ok {
			seen[e.Job]++
			number[k] = seen[e.Job]
		}
	}
	for i := range ops {
		o := &ops[i].op
		switch o.Input.Kind {
		case model.OpClaim:
			if n, ok := number[key{ops[i].life, o.Output.Job, o.Output.Gen}]; ok && o.Output.Found {
				o.Output.Gen = n
			}
		case model.OpComplete, model.OpExpire:
			if n, ok := number[key{ops[i].life, o.Input.Job, o.Input.Gen}]; ok && o.Input.Gen != 0 {
				o.Input.Gen = n
			}
		case model.OpObserve:
			o.Output.Gen = seen[o.Input.Job]
		}
	}
}

// Executions are the executions the workers reported, in the order they began.
func (b *Builder) Executions() []Execution {
	out := append([]Execution(nil), b.execs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// Execution is one run of a job's handler, as its worker reported it: the times are database
// times read at the handler's start and end (End is Never when the worker never reported one:
// it was killed, or stopped for good, with the job in hand).
type Execution struct {
	Life    string        `json:"life"`
	PID     int           `json:"pid"`
	Job     int64         `json:"job"`
	Gen     int64         `json:"gen"`
	Claimed int64         `json:"claimed,omitempty"` // microseconds, as the event carried it
	Start   int64         `json:"start"`             // microseconds
	End     int64         `json:"end,omitempty"`     // microseconds; 0: never reported
	Result  string        `json:"result,omitempty"`
	Took    time.Duration `json:"-"`
}

func (e Execution) String() string {
	return fmt.Sprintf("job %d attempt %d by %s (pid %d)", e.Job, e.Gen, e.Life, e.PID)
}

// executions pairs a life's start and end events.
func executions(life string, events []protocol.Event) []Execution {
	var out []Execution
	open := map[[2]int64]int{}
	for _, e := range events {
		key := [2]int64{e.Job, e.Gen}
		switch e.Ev {
		case protocol.EvStart:
			open[key] = len(out)
			out = append(out, Execution{Life: life, PID: e.PID, Job: e.Job, Gen: e.Gen, Claimed: e.Claimed, Start: e.At})
		case protocol.EvEnd:
			if i, ok := open[key]; ok {
				out[i].End, out[i].Result = e.At, e.Result
				delete(open, key)
			}
		}
	}
	return out
}
