package check

import (
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// TestLinearCrashChecksHandmade: each crash check fails on a history that breaks it, names the
// crash and the property, and passes the same history with the promise kept.
func TestLinearCrashChecksHandmade(t *testing.T) {
	ms := func(d int) time.Duration { return time.Duration(d) * time.Millisecond }
	at := func(from, to int) model.Window { return model.Window{From: ms(from), To: ms(to)} }
	base := func() *hist {
		return new(hist).enq(1, 2, 1).claim("w1", 3, 4, 1, 1).complete("w1", 5, 6, 1, 1, 1).
			enq(7, 8, 2).claim("w2", 9, 10, 2, 1)
	}
	timed := func(h *hist, lease time.Duration) *hist {
		h.add("probe", 11, 12, model.Input{Kind: model.OpClaim, Lease: lease, At: at(100, 101)}, model.Output{Found: true, Job: 3, Gen: 1})
		return h
	}
	crashed := func(h *hist) *history.History {
		hh := h.history(false)
		hh.Faults = []history.Fault{{At: 20, Kind: history.FaultCrash, Target: "server"}, {At: 30, Kind: history.FaultRestart, Target: "server"}}
		return hh
	}
	see := func(h *hist, call, ret, id int64, st model.State, gen int64, live bool, w model.Window) *hist {
		h.add("probe", call, ret, model.Input{Kind: model.OpObserve, Job: id, At: w}, model.Output{Found: true, State: st, Gen: gen, Live: live})
		return h
	}
	withEnq3 := func() *hist { return base().enq(10, 11, 3) }
	cases := []struct {
		name string
		h    *history.History
		prop model.Property // 0: no crash check fails
		want string
	}{
		{"kept", crashed(see(see(base(), 31, 32, 1, model.Done, 1, false, at(500, 501)), 31, 32, 2, model.Running, 1, true, at(500, 501))), 0, ""},
		{"acknowledged completion lost", crashed(see(base(), 31, 32, 1, model.Running, 1, true, at(500, 501))), model.PDoneOnce, "an acknowledged completion was lost"},
		{"done job claimed again", crashed(base().claim("w3", 31, 32, 1, 2)), model.PDoneOnce, "a claim after the restart returned it"},
		{"done job completed again", crashed(base().complete("w1", 31, 32, 1, 1, 1)), model.PDoneOnce, "accepted again"},
		{"generation went back", crashed(see(base(), 31, 32, 2, model.Ready, 0, false, at(500, 501))), model.PGenerations, "a generation went back"},
		{"generation reused", crashed(base().claim("w3", 31, 32, 2, 1)), model.PGenerations, "a generation was reused"},
		{"enqueued job missing", crashed(base().enq(11, 12, 3).add("probe", 31, 32, model.Input{Kind: model.OpObserve, Job: 3}, model.Output{})), model.PRecovery, "missing after the restart"},
		{"job missing", crashed(base().add("probe", 31, 32, model.Input{Kind: model.OpObserve, Job: 2}, model.Output{})), model.PRecovery, "missing after the restart"},
		{"lease live while it runs", crashed(see(timed(withEnq3(), time.Second), 31, 32, 3, model.Running, 1, true, at(900, 901))), 0, ""},
		{"lease over after its end", crashed(see(timed(withEnq3(), time.Second), 31, 32, 3, model.Running, 1, false, at(1200, 1201))), 0, ""},
		{"lease cut short by the restart", crashed(see(timed(withEnq3(), time.Second), 31, 32, 3, model.Running, 1, false, at(900, 901))), model.PDBTime, "saw it not live"},
		{"lease outlives its end", crashed(see(timed(withEnq3(), time.Second), 31, 32, 3, model.Running, 1, true, at(1200, 1201))), model.PDBTime, "saw it live"},
		{"acknowledged expiry lost", crashed(see(base().expire(11, 12, 2), 31, 32, 2, model.Running, 1, true, at(500, 501))), model.PRecovery, "an acknowledged expiry was lost"},
		{"acknowledged expiry kept", crashed(see(base().expire(11, 12, 2), 31, 32, 2, model.Running, 1, false, at(500, 501))), 0, ""},
		{"acknowledged expiry lost, then completed", crashed(base().expire(11, 12, 2).complete("w2", 31, 32, 2, 1, 1)), model.PRecovery, "a completion of that generation after the restart (by w2) was accepted: an acknowledged expiry was lost"},
		{"acknowledged expiry kept, completion refused", crashed(base().expire(11, 12, 2).complete("w2", 31, 32, 2, 1, 0)), 0, ""},
		{"expired and claimed again", crashed(see(base().expire(11, 12, 2).claim("w3", 13, 14, 2, 2), 31, 32, 2, model.Running, 2, true, at(500, 501))), 0, ""},
		{"lease expired by the harness", crashed(see(timed(withEnq3(), time.Second).expire(13, 14, 3), 31, 32, 3, model.Running, 1, false, at(900, 901))), 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := crashChecks(c.h)
			if c.prop == 0 {
				if len(vs) > 0 {
					t.Fatalf("crash checks fail a history that keeps every promise: %v", vs)
				}
				return
			}
			if len(vs) == 0 {
				t.Fatalf("no crash check fails; want property %d (%s)", c.prop, c.want)
			}
			if vs[0].Property != c.prop || !strings.Contains(vs[0].Error(), c.want) {
				t.Fatalf("got %v; want property %d, %q", vs[0], c.prop, c.want)
			}
			v := Check(c.h, 10*time.Second)
			if v.OK {
				t.Fatalf("Check passes a history a crash check fails: %s", v)
			}
			// Without the crash, the same operations are judged by the other checks only.
			c.h.Faults = nil
			if vs := crashChecks(c.h); len(vs) > 0 {
				t.Fatalf("crash checks fail a history without a crash: %v", vs)
			}
		})
	}
}
