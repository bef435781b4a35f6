package schedule

import (
	"context"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestScheduledProxyFaults: drawn proxy faults in scheduled mode, one run per kind on the seed
// queue. s0 holds job 1 from the prefix; s1 claims with the fault armed, then s0 claims. A
// dropped reply leaves s1's claim unknown though the server committed it (s0 finds nothing,
// the drain finds job 2 running); a cut leaves it unknown and the server ran nothing (s0
// takes job 2); a delay and a stall only make it late. Each run's fault is in its history's faults, the run holds, and its program
// reads back with the fault's line and replays.
func TestScheduledProxyFaults(t *testing.T) {
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	s := NewScheduler(context.Background(), in, Config{Name: "proxy", ReportDir: t.TempDir()})
	defer s.Close()
	pf := kindAt(t, generate.Suffix, "proxy-fault")
	for i, k := range faultproxy.Kinds {
		t.Run(string(k), func(t *testing.T) {
			ch := &scripted{t: t, want: map[string][]int{
				"jobs": {2}, "prefix claim": {1}, "suffix": {1, 1},
				"op s0": {0}, "op s1": {pf}, "proxy fault": {i}, "hold": {1},
				// s1 arms its fault and claims; then s0 claims.
				"next": {1, 1, 0},
			}}
			s.run(t, ch, nil)
			if s.Last() != nil {
				t.Fatalf("the run failed on the seed queue:\n%s", s.Last())
			}
			trace := s.Trace()
			t.Logf("\n%s", trace)
			line := program.ProxyFault{S: "s1", Kind: k, For: generate.ScheduledHolds[1]}.String()
			if !hasLine(trace, line) {
				t.Fatalf("the trace has no line %q", line)
			}
			after := map[faultproxy.Kind]string{
				faultproxy.DropReply:  "s0 snapshot -> [1:running/g1/live 2:running/g1/live]",
				faultproxy.Cut:        "s0 claim (strict) -> job 2 gen 1",
				faultproxy.DelayReply: "s1 claim (strict) -> job 2 gen 1",
				faultproxy.Stall:      "s1 claim (strict) -> job 2 gen 1",
			}[k]
			if !hasLine(trace, after) {
				t.Fatalf("the trace has no line %q", after)
			}
			var faults []string
			for _, f := range s.lastHistory.Faults {
				faults = append(faults, f.Kind+" "+f.Target)
			}
			if len(faults) != 1 || faults[0] != string(k)+" s1" {
				t.Fatalf("the history's faults are %q; want one %s on s1", faults, k)
			}
			var claim *history.Op
			for i, o := range s.lastHistory.Ops {
				if o.Session == "s1" && o.Input.Kind == model.OpClaim {
					claim = &s.lastHistory.Ops[i]
					break
				}
			}
			if claim == nil {
				t.Fatal("no claim by s1 in the history")
			}
			if unknown := claim.Output.Outcome == model.Unknown; unknown != k.Lost() {
				t.Fatalf("s1's claim after %s: %s; want an unknown outcome exactly when the fault loses the connection", k, model.DescribeOp(claim.Input, claim.Output))
			}
			if k.Lost() && (claim.Return != history.Never || !hasLine(trace, "s1 claim (strict) -> connection lost")) {
				t.Fatalf("s1's lost claim returns at %d, not history.Never, or the trace does not say the connection was lost", claim.Return)
			}
			p, err := program.Parse(s.lastProgram.Format())
			if err != nil || p.Body() != s.lastProgram.Body() {
				t.Fatalf("the program does not read back (%v):\n%s", err, s.lastProgram.Format())
			}
			if f, err := s.ReplayProgram(p); err != nil || f != nil {
				t.Fatalf("the program does not replay (%v):\n%v", err, f)
			}
			if !hasLine(s.Trace(), line) {
				t.Fatalf("the replay's trace has no line %q:\n%s", line, s.Trace())
			}
		})
	}
}
