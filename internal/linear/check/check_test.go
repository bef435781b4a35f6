package check

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// hist builds a handmade history; each op is its own client unless said otherwise.
type hist struct{ ops []history.Op }

func (h *hist) add(session string, call, ret int64, in model.Input, out model.Output) *hist {
	if ret == history.Never {
		out.Outcome = model.Unknown
	}
	h.ops = append(h.ops, history.Op{Client: len(h.ops), Session: session, Input: in, Output: out, Call: call, Return: ret})
	return h
}
func (h *hist) enq(call, ret, id int64) *hist {
	return h.add("enqueuer", call, ret, model.Input{Kind: model.OpEnqueue}, model.Output{Job: id})
}
func (h *hist) claim(s string, call, ret, id, gen int64) *hist {
	return h.add(s, call, ret, model.Input{Kind: model.OpClaim}, model.Output{Found: true, Job: id, Gen: gen})
}
func (h *hist) claimNone(s string, call, ret int64, strict bool) *hist {
	return h.add(s, call, ret, model.Input{Kind: model.OpClaim, Strict: strict}, model.Output{})
}
func (h *hist) complete(s string, call, ret, id, gen, rows int64) *hist {
	return h.add(s, call, ret, model.Input{Kind: model.OpComplete, Job: id, Gen: gen}, model.Output{Rows: rows})
}
func (h *hist) expire(call, ret, id int64) *hist {
	return h.add("chaos", call, ret, model.Input{Kind: model.OpExpire, Job: id}, model.Output{})
}
func (h *hist) observe(call, ret, id int64, st model.State, gen int64, live bool) *hist {
	return h.add("reader", call, ret, model.Input{Kind: model.OpObserve, Job: id}, model.Output{Found: true, State: st, Gen: gen, Live: live})
}
func (h *hist) history(drained bool) *history.History {
	return &history.History{Version: history.Version, Queue: "handmade", Mode: "handmade", Clock: "logical", Drained: drained, Ops: h.ops}
}

// TestCheckHandmade: the checker passes legal histories and fails each broken promise,
// naming the property.
func TestLinearCheckHandmade(t *testing.T) {
	cases := []struct {
		name string
		h    *history.History
		prop model.Property // 0: legal
	}{
		{"claim, pause, complete", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).complete("w1", 5, 6, 1, 1, 1).history(false), 0},
		{"stale generation refused after a reclaim", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).expire(5, 6, 1).
			claim("w2", 7, 8, 1, 2).complete("w1", 9, 10, 1, 1, 0).complete("w2", 11, 12, 1, 2, 1).history(false), 0},
		{"stale generation's completion accepted", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).expire(5, 6, 1).
			claim("w2", 7, 8, 1, 2).complete("w1", 9, 10, 1, 1, 1).history(false), model.PFencing},
		{"claim of a job whose lease is live", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).claim("w2", 5, 6, 1, 2).history(false), model.PExclusion},
		{"two claims, one generation (a race)", new(hist).enq(1, 2, 1).claim("w1", 3, 6, 1, 1).claim("w2", 4, 7, 1, 1).history(false), model.PExclusion},
		{"two accepted completions", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).complete("w1", 5, 6, 1, 1, 1).
			complete("w2", 7, 8, 1, 1, 1).history(false), model.PDoneOnce},
		{"generation skips", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 2).history(false), model.PGenerations},
		{"generation repeats", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).expire(5, 6, 1).claim("w2", 7, 8, 1, 1).history(false), model.PGenerations},
		{"the owner's completion refused", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).complete("w1", 5, 6, 1, 1, 0).history(false), model.PFencing},
		{"expired lease's completion accepted", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).expire(5, 6, 1).complete("w1", 7, 8, 1, 1, 1).history(false), model.PFencing},
		{"an unknown claim explains a skipped generation", new(hist).enq(1, 2, 1).
			add("w1", 3, history.Never, model.Input{Kind: model.OpClaim}, model.Output{}).expire(5, 6, 1).claim("w2", 7, 8, 1, 2).history(false), 0},
		{"an empty claim is always legal", new(hist).enq(1, 2, 1).claimNone("w1", 3, 4, false).history(false), 0},
		{"a strict empty claim must be justified", new(hist).enq(1, 2, 1).claimNone("w1", 3, 4, true).history(false), model.PRecovery},
		// A stale completion is property 1 wherever a snapshot lands: the reader that saw the
		// job done overlapped the completion, was called first, and is not what broke.
		{"stale completion beside an overlapping snapshot", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).expire(5, 6, 1).
			claim("w2", 7, 8, 1, 2).observe(9, 30, 1, model.Done, 2, false).complete("w1", 10, 11, 1, 1, 1).history(false), model.PFencing},
		// ... and when the stale completion's answer was lost, the snapshot that saw the job done
		// shows what only that completion could have done.
		{"stale completion whose answer was lost, seen done", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).expire(5, 6, 1).
			claim("w2", 7, 8, 1, 2).complete("w1", 9, history.Never, 1, 1, 0).observe(10, 11, 1, model.Done, 2, false).history(false), model.PFencing},
		{"drained: every job done once", new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).complete("w1", 5, 6, 1, 1, 1).
			observe(7, 8, 1, model.Done, 1, false).history(true), 0},
		{"drained: a job lost", new(hist).enq(1, 2, 1).enq(3, 4, 2).claim("w1", 5, 6, 1, 1).complete("w1", 7, 8, 1, 1, 1).
			observe(9, 10, 1, model.Done, 1, false).observe(9, 10, 2, model.Ready, 0, false).history(true), model.PRecovery},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Check(c.h, time.Minute)
			if c.prop == 0 {
				if !v.OK {
					t.Fatalf("legal history rejected: %s\n%s", v, v.Explanation)
				}
				return
			}
			if v.OK || v.Violation == nil {
				t.Fatalf("illegal history passed (want property %d): %s", c.prop, v)
			}
			if v.Violation.Property != c.prop {
				t.Fatalf("got %s, want property %d\n%s", v, c.prop, v.Explanation)
			}
		})
	}
}

// TestSimulatedHistoriesPass: long histories from a simulated correct run, with lost
// outcomes, are linearizable, and survive a JSON round trip.
func TestLinearSimulatedHistoriesPass(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		h := Simulate(SimConfig{Ops: 20000, Seed: seed, Unknown: 0.005})
		v := Check(h, time.Minute)
		if !v.OK {
			t.Fatalf("seed %d: %s\n%s", seed, v, v.Explanation)
		}
		path := filepath.Join(t.TempDir(), "h.json")
		if err := h.Save(path); err != nil {
			t.Fatal(err)
		}
		loaded, err := history.Load(path)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if v := Check(loaded, 5*time.Minute); !v.OK {
			t.Fatalf("seed %d after a round trip: %v", seed, v)
		}
	}
}

// TestCorruptedSimulationsFail: one wrong answer in a long legal history is found.
func TestLinearCorruptedSimulationsFail(t *testing.T) {
	h := Simulate(SimConfig{Ops: 5000, Seed: 7})
	type corruption struct {
		name string
		pick func(o history.Op) bool
		mod  func(o *history.Op)
		prop model.Property
	}
	cs := []corruption{
		{"a refused completion accepted", func(o history.Op) bool {
			return o.Input.Kind == model.OpComplete && o.Output.Outcome == model.Returned && o.Output.Rows == 0
		}, func(o *history.Op) { o.Output.Rows = 1 }, model.PFencing},
		{"an accepted completion refused", func(o history.Op) bool {
			return o.Input.Kind == model.OpComplete && o.Output.Outcome == model.Returned && o.Output.Rows == 1
		}, func(o *history.Op) { o.Output.Rows = 0 }, model.PFencing},
		{"a claim's generation skips", func(o history.Op) bool {
			return o.Input.Kind == model.OpClaim && o.Output.Found && o.Output.Outcome == model.Returned
		}, func(o *history.Op) { o.Output.Gen += 1 }, model.PGenerations},
	}
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			bad := &history.History{Version: history.Version, Ops: append([]history.Op(nil), h.Ops...)}
			found := false
			for i := len(bad.Ops) / 2; i < len(bad.Ops); i++ {
				if c.pick(bad.Ops[i]) {
					c.mod(&bad.Ops[i])
					found = true
					break
				}
			}
			if !found {
				t.Skip("no operation to corrupt")
			}
			v := Check(bad, time.Minute)
			if v.OK || v.Violation == nil {
				t.Fatalf("corruption passed: %s", v)
			}
			t.Log(v)
		})
	}
}

// TestMalformedHistories: a return before its call is a harness bug, reported as such.
func TestLinearMalformedHistories(t *testing.T) {
	h := new(hist).enq(5, 5, 1).history(false)
	if v := Check(h, time.Minute); v.OK || v.Violation != nil || !strings.Contains(v.String(), "malformed") {
		t.Fatalf("got %s", v)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Recorder.Add accepted a return before its call")
		}
	}()
	history.NewRecorder(true).Add(history.Op{Call: 3, Return: 2})
}

func BenchmarkLinearCheck(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		h := Simulate(SimConfig{Ops: n, Seed: 42})
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			for b.Loop() {
				if v := Check(h, 5*time.Minute); !v.OK {
					b.Fatal(v)
				}
			}
			b.ReportMetric(float64(n), "ops/history")
		})
	}
}

// TestAccountDeadDeleted: where dead rows are deleted, a drained job whose failure for good was
// accepted may be gone; one whose only failure was retryable (no attempt limit) may not.
func TestAccountDeadDeleted(t *testing.T) {
	fail := func(h *hist, retryable bool) *hist {
		return h.add("w1", 5, 6, model.Input{Kind: model.OpFail, Job: 1, Gen: 1, Retryable: retryable}, model.Output{Rows: 1})
	}
	gone := func(h *hist) *history.History {
		h.add("reader", 7, 8, model.Input{Kind: model.OpObserve, Job: 1}, model.Output{})
		hh := h.history(true)
		hh.Shape = model.Shape{DoneDeleted: true, DeadDeleted: true, Can: model.Can{Fail: true}, Life: model.Lifecycle{Backoff: time.Second}}
		return hh
	}
	if a := Account(gone(fail(new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1), false))); len(a.Problems) > 0 {
		t.Errorf("a job failed for good and deleted: %v", a.Problems)
	}
	if a := Account(gone(fail(new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1), true))); len(a.Lost) != 1 {
		t.Errorf("a job failed once, to be retried, then gone: %s; want it lost", a)
	}
}

// lostClaims is a job held for most of a second (claimed, seen running, its lease expired,
// claimed again as generation gen2, completed) beside k claims with 250 ms leases whose
// answers were lost, called while it ran, as chaos's cancels leave them. staleDone adds the
// first generation's completion, accepted after the reclaim.
func lostClaims(k int, gen2 int64, staleDone bool) *history.History {
	var ops []history.Op
	add := func(s string, call int, in model.Input, out model.Output) {
		c, r := int64(call)*int64(time.Millisecond), int64(call+1)*int64(time.Millisecond)
		in.At = model.Window{From: time.Duration(c), To: time.Duration(r)}
		if out.Outcome == model.Unknown {
			in.At.To, r = model.Never, history.Never
		}
		ops = append(ops, history.Op{Client: len(ops), Session: s, Input: in, Output: out, Call: c, Return: r})
	}
	add("enqueuer", 0, model.Input{Kind: model.OpEnqueue}, model.Output{Job: 1})
	add("w1", 2, model.Input{Kind: model.OpClaim, Lease: time.Hour}, model.Output{Found: true, Job: 1, Gen: 1})
	for at := 100; at < 900; at += 100 {
		add("reader", at, model.Input{Kind: model.OpObserve, Job: 1}, model.Output{Found: true, State: model.Running, Gen: 1, Live: true})
	}
	add("chaos", 900, model.Input{Kind: model.OpExpire, Job: 1}, model.Output{})
	add("w2", 910, model.Input{Kind: model.OpClaim, Lease: time.Hour, Strict: true}, model.Output{Found: true, Job: 1, Gen: gen2})
	if staleDone {
		add("w1", 920, model.Input{Kind: model.OpComplete, Job: 1, Gen: 1}, model.Output{Rows: 1})
	} else {
		add("w2", 920, model.Input{Kind: model.OpComplete, Job: 1, Gen: gen2}, model.Output{Rows: 1})
	}
	add("reader", 950, model.Input{Kind: model.OpObserve, Job: 1}, model.Output{Found: true, State: model.Done, Gen: gen2})
	for i := range k {
		add(fmt.Sprintf("w%d", 3+i), 50+i*850/k, model.Input{Kind: model.OpClaim, Lease: 250 * time.Millisecond}, model.Output{Outcome: model.Unknown})
	}
	return &history.History{Version: history.Version, Queue: "handmade", Mode: "handmade", Clock: "ns", Ops: ops}
}

// TestLinearLostClaimsDecideQuickly: each claim whose answer was lost is copied into every
// job's history as one that may have taken it, and porcupine may try every subset of the
// copies at every point. A stress round in which chaos cancelled many claims with short leases
// left a history it could not decide in five minutes; sixteen such claims beside one job took
// it longer than the budget here. The job is decided at once whether it needs none of them, or
// one (the claim that took generation 2), and a stale completion among them is still property 1.
func TestLinearLostClaimsDecideQuickly(t *testing.T) {
	const budget = 5 * time.Second
	for _, c := range []struct {
		name      string
		h         *history.History
		violation model.Property
	}{
		{"none of 16 took the job", lostClaims(16, 2, false), 0},
		{"one of 16 took generation 2", lostClaims(16, 3, false), 0},
		{"a stale completion beside 3", lostClaims(3, 2, true), model.PFencing},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Check(c.h, budget)
			switch {
			case v.Inconclusive:
				t.Fatalf("no verdict within %v: %s", budget, v)
			case c.violation == 0 && !v.OK:
				t.Fatalf("legal history rejected: %s\n%s", v, v.Explanation)
			case c.violation != 0 && (v.Violation == nil || v.Violation.Property != c.violation):
				t.Fatalf("got %s, want property %d", v, c.violation)
			}
		})
	}
}
