package check

import (
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// CountOps counts what a history holds, in the counts every mode keeps.
func CountOps(h *history.History) program.Counts {
	c := program.Counts{ClaimWaits: int64(len(h.Waits))}
	snaps := map[int64]bool{}
	for _, o := range h.Ops {
		c.Ops++
		in, out := o.Input, o.Output
		switch out.Outcome {
		case model.Unknown:
			c.Unknown++
		case model.Aborted:
			c.Aborted++
		}
		switch in.Kind {
		case model.OpEnqueue:
			if out.Outcome == model.Returned {
				c.Enqueued++
				if in.Delay > 0 {
					c.Scheduled++
				}
			}
		case model.OpFail:
			if out.Outcome == model.Returned && out.Rows == 1 {
				c.Failures++
			}
		case model.OpRenew:
			if out.Outcome == model.Returned && (out.Rows == 1 || out.Found) {
				c.Renewals++
			}
		case model.OpEffect:
			if out.Outcome == model.Returned {
				c.Effects++
			}
		case model.OpClaim:
			if program.TimedLease(in.Lease) && out.Outcome != model.NotSent {
				c.TimedClaims++
			}
			switch {
			case out.Outcome != model.Returned:
			case out.Found:
				c.Claims++
			default:
				c.EmptyClaims++
			}
		case model.OpComplete:
			if out.Outcome == model.Returned {
				if out.Rows == 1 {
					c.Completions++
				} else {
					c.RejectedCompletions++
				}
			}
		case model.OpExpire:
			c.Expiries++
		case model.OpObserve:
			snaps[o.Call] = true
		case model.OpLock:
			c.Locks++
		case model.OpUnlock:
			c.Releases++
		}
	}
	c.Snapshots = int64(len(snaps))
	for _, f := range h.Faults {
		switch f.Kind {
		case "cancel":
			c.Cancels++
		case "terminate":
			c.Terminates++
		case string(faultproxy.DropReply):
			c.DroppedReplies++
		case string(faultproxy.Cut):
			c.Cuts++
		case string(faultproxy.DelayReply):
			c.Delays++
		case string(faultproxy.Stall):
			c.Stalls++
		}
	}
	return c
}
