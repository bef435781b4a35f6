package observed

import (
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy/protocol"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/model"
)

var origin = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)

// at is a database time ms after the origin, as events carry it.
func at(ms int64) int64 { return origin.Add(time.Duration(ms) * time.Millisecond).UnixMicro() }

// events of a stale worker: w1 claims job 1 and stalls past its 100 ms lease; w2 claims it
// again and holds it; w1 resumes and completes with its old generation; w2's completion then
// finds it done. With accepted (the queue's answer to w1) 1, the queue let a stale worker
// complete; with 0, it refused, as a fenced queue must.
func stale(accepted int64) (enq, w1, w2, snap []protocol.Event) {
	enq = []protocol.Event{
		{Ev: protocol.EvSend, Seq: 1, Op: protocol.OpEnqueue},
		{Ev: protocol.EvAnswer, Seq: 1, Op: protocol.OpEnqueue, From: at(0), To: at(1), Job: 1},
	}
	w1 = []protocol.Event{
		{Ev: protocol.EvSend, Seq: 1, Op: protocol.OpClaim},
		{Ev: protocol.EvAnswer, Seq: 1, Op: protocol.OpClaim, From: at(10), To: at(11), Found: true, Job: 1, Gen: 1},
		{Ev: protocol.EvStart, Job: 1, Gen: 1, At: at(11), Claimed: at(10)},
		{Ev: protocol.EvSend, Seq: 2, Op: protocol.OpComplete, Job: 1, Gen: 1},
		{Ev: protocol.EvAnswer, Seq: 2, Op: protocol.OpComplete, From: at(230), To: at(231), Job: 1, Gen: 1, Rows: accepted},
	}
	done := protocol.ResultRefused
	if accepted == 0 {
		done = protocol.ResultDone
	}
	w2 = []protocol.Event{
		{Ev: protocol.EvSend, Seq: 1, Op: protocol.OpClaim},
		{Ev: protocol.EvAnswer, Seq: 1, Op: protocol.OpClaim, From: at(200), To: at(201), Found: true, Job: 1, Gen: 2},
		{Ev: protocol.EvStart, Job: 1, Gen: 2, At: at(201), Claimed: at(200)},
		{Ev: protocol.EvSend, Seq: 2, Op: protocol.OpComplete, Job: 1, Gen: 2},
		{Ev: protocol.EvAnswer, Seq: 2, Op: protocol.OpComplete, From: at(260), To: at(261), Job: 1, Gen: 2, Rows: 1 - accepted},
		{Ev: protocol.EvEnd, Job: 1, Gen: 2, At: at(261), Result: done},
	}
	snap = []protocol.Event{{Ev: protocol.EvObserve, Job: 1, State: "done", Gen: 2, From: at(500), To: at(501)}}
	return
}

func build(enq, w1, w2, snap []protocol.Event) *Builder {
	b := &Builder{Origin: origin, Lease: 100 * time.Millisecond}
	b.Worker("enqueuer", enq)
	b.Worker("w1", w1)
	b.Worker("w2", w2)
	b.Worker("snapshot", snap)
	return b
}

// TestStaleCompletionIsCaught: the events of a stale worker's accepted completion make a
// history the checks of every mode reject with property 1; refused, it holds.
func TestStaleCompletionIsCaught(t *testing.T) {
	h := build(stale(1)).History("test", model.Shape{})
	v := check.Check(h, time.Minute)
	if v.OK || v.Violation == nil || v.Violation.Property != model.PFencing {
		t.Fatalf("a stale completion accepted: %s; want property 1", v)
	}
	if at, ok := FirstViolation(h, 1); !ok || at != 231*time.Millisecond {
		t.Fatalf("first violation at %v (%v); want when the stale completion's answer came back, +0.231s", at, ok)
	}
	if v := check.Check(build(stale(0)).History("test", model.Shape{}), time.Minute); !v.OK {
		t.Fatalf("a stale completion refused: %s; want it to hold", v)
	}
}

// TestUnansweredStatementIsUnknown: a send whose answer never came (the worker was killed)
// is an operation of unknown outcome, returning never, on a client of its own.
func TestUnansweredStatementIsUnknown(t *testing.T) {
	enq, w1, _, _ := stale(0)
	w1 = w1[:4] // killed after sending its completion
	b := &Builder{Origin: origin, Lease: 100 * time.Millisecond}
	b.Worker("enqueuer", enq)
	b.Worker("w1", w1)
	h := b.History("test", model.Shape{})
	var found bool
	for _, o := range h.Ops {
		if o.Input.Kind == model.OpComplete {
			found = true
			if o.Output.Outcome != model.Unknown || o.Return != int64(^uint64(0)>>1) {
				t.Fatalf("an unanswered completion recorded as %+v", o)
			}
		}
	}
	if !found {
		t.Fatal("the unanswered completion is missing from the history")
	}
	if execs := b.Executions(); len(execs) != 1 || execs[0].End != 0 {
		t.Fatalf("executions %+v; want one that never ended", execs)
	}
}

// TestOverlapIsExclusion: an execution that began while another's lease was certainly live is
// property 2 of observed executions; one that began after it lapsed is not.
func TestOverlapIsExclusion(t *testing.T) {
	enq, w1, w2, snap := stale(0)
	b := build(enq, w1, w2, snap)
	if v := b.Check(Rules{Lease: 100 * time.Millisecond}); !v.OK() {
		t.Fatalf("executions 190 ms apart with a 100 ms lease: %+v", v.Findings[0].Violation)
	}
	v := b.Check(Rules{Lease: time.Second})
	if v.OK() || v.Findings[0].Violation.Property != model.PExclusion || v.Findings[0].Job != 1 {
		t.Fatalf("executions 190 ms apart with a 1 s lease held: %+v", v)
	}
}

// TestRunAtAndAttempts: an execution begun before its job's run-at time breaks property 14,
// one beyond the attempts allowed property 12; within both, they hold.
func TestRunAtAndAttempts(t *testing.T) {
	events := func(startMS, attempt int64) []protocol.Event {
		return []protocol.Event{
			{Ev: protocol.EvSend, Seq: 1, Op: protocol.OpEnqueue, DelayMS: 100},
			{Ev: protocol.EvAnswer, Seq: 1, Op: protocol.OpEnqueue, From: at(0), To: at(1), Job: 1},
		}
	}
	for _, c := range []struct {
		start, attempt int64
		want           model.Property
	}{{50, 1, model.PScheduling}, {150, 1, -1}, {150, 3, model.PRetries}} {
		b := &Builder{Origin: origin, Lease: time.Second}
		b.Worker("enqueuer", events(c.start, c.attempt))
		b.Worker("w1", []protocol.Event{{Ev: protocol.EvStart, Job: 1, Gen: c.attempt, At: at(c.start), Claimed: at(c.start - 1)}})
		v := b.Check(Rules{Lease: time.Second, MaxAttempts: 2})
		switch {
		case c.want < 0 && !v.OK():
			t.Errorf("an execution at +%dms, attempt %d, of a job due at +100ms with 2 attempts: %v", c.start, c.attempt, v.Findings[0].Violation)
		case c.want >= 0 && (v.OK() || v.Findings[0].Violation.Property != c.want):
			t.Errorf("an execution at +%dms, attempt %d: %+v; want property %d", c.start, c.attempt, v.Findings, c.want)
		}
	}
}

// TestApart: a worker's two executions of one job that its queue gave the same attempt are
// two executions, each with its own claim, completed by its own completion.
func TestApart(t *testing.T) {
	evs := apart([]protocol.Event{
		{Ev: protocol.EvStart, Job: 4, Gen: 1, At: at(10)},
		{Ev: protocol.EvEnd, Job: 4, Gen: 1, At: at(20), Result: protocol.ResultFailed},
		{Ev: protocol.EvStart, Job: 4, Gen: 1, At: at(30)},
		{Ev: protocol.EvSend, Seq: 1, Op: protocol.OpComplete, Job: 4, Gen: 1},
	})
	if evs[0].Gen != 1 || evs[2].Gen == 1 || evs[3].Gen != evs[2].Gen {
		t.Fatalf("attempts %d, %d, %d: the second execution and its completion must share an attempt of their own", evs[0].Gen, evs[2].Gen, evs[3].Gen)
	}
}

// TestReleasedIsNoOverlap: an execution whose handler gave up (its completion failed, or its
// context ended) released its job: another claim of it after that end, within the first
// claim's lease, is no overlap.
func TestReleasedIsNoOverlap(t *testing.T) {
	for _, result := range []string{protocol.ResultFailed, protocol.ResultCancelled} {
		b := &Builder{Origin: origin, Lease: time.Hour}
		b.Worker("w1", []protocol.Event{
			{Ev: protocol.EvStart, Job: 1, Gen: 1, At: at(11), Claimed: at(10)},
			{Ev: protocol.EvEnd, Job: 1, Gen: 1, At: at(50), Result: result},
			{Ev: protocol.EvStart, Job: 1, Gen: 2, At: at(101), Claimed: at(100)},
		})
		if v := b.Check(Rules{Lease: time.Hour}); !v.OK() {
			t.Errorf("a claim after a %s execution's end: %v", result, v.Findings[0].Violation)
		}
	}
}
