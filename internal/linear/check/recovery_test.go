package check

import (
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// TestRecoveryChecks: the seed's recovery rule after uncertain answers, each part shown holding
// on a legal history and failing on a broken one.
func TestRecoveryChecks(t *testing.T) {
	unknownClaim := func(h *hist, s string, call int64) *hist {
		return h.add(s, call, history.Never, model.Input{Kind: model.OpClaim}, model.Output{})
	}
	unknownComplete := func(h *hist, s string, call, id, gen int64) *hist {
		return h.add(s, call, history.Never, model.Input{Kind: model.OpComplete, Job: id, Gen: gen}, model.Output{})
	}
	unknownEnqueue := func(h *hist, call int64) *hist {
		return h.add("enqueuer", call, history.Never, model.Input{Kind: model.OpEnqueue}, model.Output{})
	}
	cases := []struct {
		name string
		h    *history.History
		prop model.Property // 0: legal
		// linearizable: the history alone is linearizable, so only the recovery check or the
		// accounting can reject it.
		linearizable bool
	}{
		{"uncertain claim, then a token invented from it", unknownClaim(new(hist).enq(1, 2, 1), "w1", 3).
			complete("w1/2", 5, 6, 1, 1, 1).history(false), model.PRecovery, true},
		{"uncertain claim, the worker waits for the lease and reclaims", unknownClaim(new(hist).enq(1, 2, 1), "w1", 3).
			expire(5, 6, 1).claim("w1/2", 7, 8, 1, 2).complete("w1/2", 9, 10, 1, 2, 1).
			observe(11, 12, 1, model.Done, 2, false).history(true), 0, true},
		{"uncertain claim, its job never claimable again (lost)", unknownClaim(new(hist).enq(1, 2, 1), "w1", 3).
			expire(5, 6, 1).observe(11, 12, 1, model.Running, 1, false).history(true), model.PRecovery, true},
		{"uncertain completion that applied", unknownComplete(new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1), "w1", 5, 1, 1).
			observe(7, 8, 1, model.Done, 1, false).history(true), 0, true},
		{"uncertain completion that did not: reclaimable after its lease", unknownComplete(new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1), "w1", 5, 1, 1).
			expire(7, 8, 1).claim("w2", 9, 10, 1, 2).complete("w2", 11, 12, 1, 2, 1).observe(13, 14, 1, model.Done, 2, false).history(true), 0, true},
		{"uncertain completion both done and reclaimed", unknownComplete(new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1), "w1", 5, 1, 1).
			observe(7, 8, 1, model.Done, 1, false).expire(9, 10, 1).claim("w2", 11, 12, 1, 2).history(false), model.PDoneOnce, false},
		{"lost enqueue answer, its job drained", unknownEnqueue(new(hist), 1).claim("w1", 3, 4, 7, 1).complete("w1", 5, 6, 7, 1, 1).
			observe(7, 8, 7, model.Done, 1, false).history(true), 0, true},
		{"lost enqueue answer, its job left ready by the drain (lost)", unknownEnqueue(new(hist), 1).
			observe(7, 8, 7, model.Ready, 0, false).history(true), model.PRecovery, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Check(c.h, time.Minute)
			if c.prop == 0 {
				if !v.OK {
					t.Fatalf("a legal history was rejected: %s\n%s", v, v.Explanation)
				}
				return
			}
			if v.OK || v.Violation == nil || v.Violation.Property != c.prop {
				t.Fatalf("verdict %s; want property %d", v, c.prop)
			}
			if lin := v.Job == 0; lin != c.linearizable {
				t.Fatalf("porcupine called the history linearizable=%v (job %d), want %v", lin, v.Job, c.linearizable)
			}
		})
	}
}
