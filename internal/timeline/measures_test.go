package timeline

import (
	"reflect"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

func TestComputeHandmade(t *testing.T) {
	m := Compute(handmade(), 100)
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", what, got, want)
		}
	}
	check("span", [2]int64{m.Start, m.End}, [2]int64{0, 2000 * ms})
	check("statements", m.Ops, 13) // 14 operations, the snapshot's two rows one statement
	// Claims that came back took 2, 7, 4 and 10 ms; the unknown ones have no latency.
	check("claim latency", m.ClaimLatency, Summary{Count: 4, P50: 4 * ms, P99: 10 * ms, Max: 10 * ms})
	// Job 1 waited 12-1 ms, job 2 20-3 ms; job 3 was never claimed.
	check("ready age", m.ReadyAge, Summary{Count: 2, P50: 11 * ms, P99: 17 * ms, Max: 17 * ms})
	check("unclaimed", m.Unclaimed, 1)
	check("attempts", m.Attempts, Attempts{Jobs: 2, Claims: 4, Mean: 2, Max: 2, ByCount: []int{0, 2}})
	check("completions", [2]int{m.Completions, m.RejectedCompletions}, [2]int{1, 1})
	// Job 2's timed lease of 1 s ends at 1020 ms and it is reclaimed at 2000; job 1 is expired
	// at 1031 and reclaimed at 1044: both at once in between.
	check("expired-running peak", m.ExpiredRunningPeak, 2)
	w := m.BucketWidth
	check("bucket width", w, 20*ms)
	at := func(t int64) int { return m.ExpiredRunning[int(t*ms/w)] }
	check("expired-running at 500, 1035, 1500 ms", []int{at(500), at(1035), at(1500)}, []int{0, 2, 1})
	check("traffic's expired-running peak, no mark", m.TrafficExpiredRunningPeak, 2)
	marked := handmade()
	marked.Marks = []Mark{{At: 1025 * ms, Label: "drain"}} // both spans begin in or after its bucket
	if mm := Compute(marked, 100); mm.TrafficExpiredRunningPeak != 0 || mm.ExpiredRunningPeak != 2 {
		t.Errorf("with a mark at 1025 ms: traffic's peak %d (want 0), whole run's %d (want 2)", mm.TrafficExpiredRunningPeak, mm.ExpiredRunningPeak)
	}
	check("ready waiting at 500 ms", m.ReadyWaiting[500*ms/w], 1)
	check("oldest ready at 500 ms", m.OldestReady[500*ms/w], 520*ms-1-6*ms)
	check("faults", m.Faults, []Window{
		{Kind: "cancel", Target: "w0", From: 500 * ms, To: 1050 * ms, Derived: true}, // its claim lost: w0's next call
		{Kind: "stall", Target: "w1", From: 1200 * ms, To: 1500 * ms},
	})
	byKind := map[string]Statement{}
	var names []string
	for _, k := range m.Statements {
		byKind[k.Name] = k
		names = append(names, k.Name)
	}
	check("kinds", names, []string{"enqueue", "claim", "complete", "expire", "snapshot"})
	check("claims, unknown", [2]int{byKind["claim"].Ops, byKind["claim"].Unknown}, [2]int{6, 2})
	check("unknown claim's bucket", byKind["claim"].Points[100*ms/w].Unknown, 1)
	check("snapshot statements", byKind["snapshot"].Ops, 1)
	total := 0
	for _, p := range byKind["claim"].Points {
		total += p.Ops
	}
	check("claims placed in buckets", total, 4)
}

// An empty run and a run of one instant still measure and draw: a report folder is written for
// every run.
func TestComputeDegenerate(t *testing.T) {
	for _, r := range []*Run{{Clock: "ns"}, {Clock: "logical", Ops: handmade().Ops[:1]}} {
		m := Compute(r, 0)
		if len(m.ExpiredRunning) == 0 || len(m.ExpiredRunning) != len(m.ReadyWaiting) {
			t.Fatalf("%d ops: series of %d and %d buckets", len(r.Ops), len(m.ExpiredRunning), len(m.ReadyWaiting))
		}
		var b testWriter
		if err := Write(&b, r, m); err != nil || b.n == 0 {
			t.Fatalf("%d ops: page of %d bytes, %v", len(r.Ops), b.n, err)
		}
	}
}

type testWriter struct{ n int }

func (w *testWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// A fault without an end lasts as long as the statement it hit: to that statement's return,
// to the session's next call (on any of its connections) when the answer was lost, and not
// at all on an idle session.
func TestFaultWindows(t *testing.T) {
	op := func(s string, call, ret int64) Op { return Op{Session: s, Call: call, Return: ret} }
	ops := []Op{op("w0", 10, 20), op("w0", 30, Never), op("w0/2", 45, 50), op("w1", 5, 8), op("w1", 100, 110)}
	faults := []Fault{{At: 15, Kind: "cancel", Target: "w0"}, {At: 35, Kind: "terminate", Target: "w0"}, {At: 60, Kind: "cancel", Target: "w1"}, {At: 70, Until: 90, Kind: "stall", Target: "w1"}}
	got := windows(faults, ops, 200)
	want := []Window{
		{Kind: "cancel", Target: "w0", From: 15, To: 20, Derived: true},
		{Kind: "terminate", Target: "w0", From: 35, To: 45, Derived: true},
		{Kind: "cancel", Target: "w1", From: 60, To: 60, Derived: true},
		{Kind: "stall", Target: "w1", From: 70, To: 90},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("windows:\n got %+v\nwant %+v", got, want)
	}
}

// The lifecycle's measures: a failure retried by the next claim, a final one leaving its job
// dead, a renewal, a job scheduled for later, an effect committed beside one rolled back, and
// the business table read.
func TestComputeLifecycle(t *testing.T) {
	op := func(call int64, in model.Input, out model.Output) Op {
		return Op{Session: "w0", Input: in, Output: out, Call: call * ms, Return: (call + 1) * ms}
	}
	run := &Run{Clock: "ns", Ops: []Op{
		op(0, model.Input{Kind: model.OpEnqueue}, model.Output{Job: 1}),
		op(2, model.Input{Kind: model.OpEnqueue, Delay: time.Second}, model.Output{Job: 2}),
		op(4, model.Input{Kind: model.OpClaim}, model.Output{Found: true, Job: 1, Gen: 1}),
		op(6, model.Input{Kind: model.OpFail, Job: 1, Gen: 1, Retryable: true}, model.Output{Rows: 1}),
		op(8, model.Input{Kind: model.OpClaim}, model.Output{Found: true, Job: 1, Gen: 2}),
		op(10, model.Input{Kind: model.OpRenew, Job: 1, Gen: 2}, model.Output{Rows: 1}),
		op(12, model.Input{Kind: model.OpEffect, Job: 1}, model.Output{}),
		op(14, model.Input{Kind: model.OpComplete, Job: 1, Gen: 2}, model.Output{Rows: 1}),
		op(16, model.Input{Kind: model.OpClaim}, model.Output{Found: true, Job: 2, Gen: 1}),
		op(18, model.Input{Kind: model.OpEffect, Job: 2}, model.Output{Outcome: model.Aborted}),
		op(20, model.Input{Kind: model.OpFail, Job: 2, Gen: 1}, model.Output{Rows: 1}),
		op(22, model.Input{Kind: model.OpObserve, Job: 1}, model.Output{Found: true, State: model.Done, Gen: 2}),
		op(22, model.Input{Kind: model.OpObserve, Job: 2}, model.Output{Found: true, State: model.Dead, Gen: 1}),
		op(24, model.Input{Kind: model.OpEffects, Job: 1}, model.Output{Rows: 1}),
		op(24, model.Input{Kind: model.OpEffects, Job: 2}, model.Output{}),
	}}
	got := Compute(run, 10).Life
	want := Life{Failures: 2, Final: 1, Retries: 1, Dead: 1, Renewals: 1, Scheduled: 1, Effects: 1, InTable: 1}
	if got != want {
		t.Errorf("lifecycle measures %+v, want %+v", got, want)
	}
	if none := Compute(handmade(), 10).Life; none.any() {
		t.Errorf("a run without a lifecycle measures %+v", none)
	}
}
