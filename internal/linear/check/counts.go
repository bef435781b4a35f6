package check

import (
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// CountOps counts what a history holds, in the counts every mode keeps: each operation as its
// kind's facts say (Counts.Op), one snapshot statement however many rows it observed, and the
// faults the run injected.
func CountOps(h *history.History) program.Counts {
	c := program.Counts{ClaimWaits: int64(len(h.Waits))}
	snaps := map[int64]bool{}
	for _, o := range h.Ops {
		c.Ops++
		switch o.Output.Outcome {
		case model.Unknown:
			c.Unknown++
		case model.Aborted:
			c.Aborted++
		}
		c.Op(o.Input, o.Output)
		if model.FactsOf(o.Input, o.Output).Observes {
			snaps[o.Call] = true
		}
	}
	c.Snapshots = int64(len(snaps))
	for _, f := range h.Faults {
		if n := faultCount[f.Kind]; n != nil {
			*n(&c)++
		}
	}
	return c
}

// faultCount is the count each kind of fault adds to.
var faultCount = map[string]func(*program.Counts) *int64{
	string(program.FaultInterrupt): func(c *program.Counts) *int64 { return &c.Interrupts },
	string(program.FaultTerminate): func(c *program.Counts) *int64 { return &c.Terminates },
	string(faultproxy.DropReply):   func(c *program.Counts) *int64 { return &c.DroppedReplies },
	string(faultproxy.Cut):         func(c *program.Counts) *int64 { return &c.Cuts },
	string(faultproxy.DelayReply):  func(c *program.Counts) *int64 { return &c.Delays },
	string(faultproxy.Stall):       func(c *program.Counts) *int64 { return &c.Stalls },
}
