package timeline

import (
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

const ms = int64(time.Millisecond)

// handmade is a small run whose measures are worked out by hand in TestComputeHandmade: three
// jobs, one expired and reclaimed, one whose timed lease runs out, one never claimed; a
// rejected and an accepted completion; two unknown claims; a snapshot of two rows; a cancel
// (instant, hitting a claim whose answer it loses) and a stall (with an end).
func handmade() *Run {
	op := func(s string, call, ret int64, in model.Input, out model.Output) Op {
		return Op{Session: s, Input: in, Output: out, Call: call * ms, Return: ret * ms}
	}
	claim := func(s string, call, ret, job, gen int64, lease time.Duration) Op {
		return op(s, call, ret, model.Input{Kind: model.OpClaim, Lease: lease}, model.Output{Found: true, Job: job, Gen: gen})
	}
	enq := func(call, ret, job int64) Op {
		return op("enqueuer", call, ret, model.Input{Kind: model.OpEnqueue}, model.Output{Job: job})
	}
	unknown := func(s string, call int64) Op {
		o := op(s, call, 0, model.Input{Kind: model.OpClaim}, model.Output{Outcome: model.Unknown})
		o.Return = Never
		return o
	}
	return &Run{
		Title: "handmade run",
		Clock: "ns",
		Ops: []Op{
			enq(0, 1, 1), enq(2, 3, 2), enq(5, 6, 3),
			claim("w0", 10, 12, 1, 1, time.Hour),
			claim("w1", 13, 20, 2, 1, time.Second),
			op("reader", 70, 72, model.Input{Kind: model.OpObserve, Job: 1}, model.Output{Found: true, State: model.Running, Gen: 1, Live: true}),
			op("reader", 70, 72, model.Input{Kind: model.OpObserve, Job: 2}, model.Output{Found: true, State: model.Running, Gen: 1, Live: true}),
			unknown("w2", 100),
			unknown("w0", 480), // the cancel at 500 hits it; w0 next acts at 1050
			op("chaos", 1030, 1031, model.Input{Kind: model.OpExpire, Job: 1}, model.Output{}),
			claim("w1", 1040, 1044, 1, 2, time.Hour),
			op("w0", 1050, 1051, model.Input{Kind: model.OpComplete, Job: 1, Gen: 1}, model.Output{Rows: 0}),
			op("w1", 1060, 1061, model.Input{Kind: model.OpComplete, Job: 1, Gen: 2}, model.Output{Rows: 1}),
			claim("w0", 1990, 2000, 2, 2, time.Hour),
		},
		Faults: []Fault{
			{At: 500 * ms, Kind: "cancel", Target: "w0"},
			{At: 1200 * ms, Until: 1500 * ms, Kind: "stall", Target: "w1"},
		},
	}
}
