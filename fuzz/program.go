// Package fuzz holds Go native fuzz targets and their seed corpora.
//
// FuzzQueue decodes bytes into a program of queue operations (two bytes a step) which runs on
// the model and the real queue side by side, exactly as the Prop suite's steps do; a step that
// does not apply in the current state is skipped, so every input is a meaningful program and the
// fuzzer's mutations stay cheap.
//
// FuzzScheduled is the concurrent target: the bytes are the choices of one run of the linear
// package's scheduled mode (sessions, prefix, operations, interleaving, faults), one byte a
// choice, and the run's history is checked for linearizability. A scheduled failure found by
// rapid (`pgqcheck run`, TestLinearScheduled) is written in the same encoding, so it becomes a
// corpus entry as it is.
//
//	go test ./fuzz                                       replays both seed corpora
//	go test -fuzz=FuzzQueue -fuzztime=10m ./fuzz         searches; failures land in testdata/fuzz/
//	go test -fuzz=FuzzScheduled -fuzztime=10m ./fuzz
//
// The queue is PGQCHECK_SQL_DIR's when set, else the built-in seed. Each fuzzing process installs
// it once per target in a database of its own and resets it for every input.
package fuzz

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
)

// Sessions in a fuzzed program: as many as the Prop suite has, so a case found by either reads
// the same.
const (
	Workers = program.Workers
	Lockers = program.Lockers
)

// MaxSteps bounds a program, so one input cannot run for long.
const MaxSteps = 64

// Code is an operation's code, the first byte of its step: the position of its kind in
// generate.FuzzCodes, the encoding's order.
type Code byte

// code is the named kind's code.
func code(name string) Code {
	i := slices.Index(generate.FuzzCodes, name)
	if i < 0 {
		panic("fuzz: no kind " + name + " in generate.FuzzCodes")
	}
	return Code(i)
}

// Step is two bytes of fuzz input: an operation's code and its argument. It is an encoding,
// not an operation: Op decodes it into one of the program package's operations, resolving job
// references (positions among the jobs enqueued so far) when the step runs, so programs mean
// the same on any queue whatever ids it hands out.
type Step struct {
	Code Code
	Arg  byte
}

// Decode turns fuzz bytes into steps: two bytes each, an odd trailing byte ignored, at most
// MaxSteps.
func Decode(b []byte) []Step {
	var out []Step
	for i := 0; i+1 < len(b) && len(out) < MaxSteps; i += 2 {
		out = append(out, Step{Code(b[i] % byte(len(generate.FuzzCodes))), b[i+1]})
	}
	return out
}

// Encode is Decode's inverse.
func Encode(steps []Step) []byte {
	out := make([]byte, 0, 2*len(steps))
	for _, s := range steps {
		out = append(out, byte(s.Code), s.Arg)
	}
	return out
}

// How a locker's transaction ends.
type End int

const (
	EndCommit End = iota
	EndRollback
	EndInterrupt
	EndTerminate
)

// How a claim transaction ends.
type TxnEnd int

const (
	TxnCompleteCommit   TxnEnd = iota // complete the claimed job, commit
	TxnCommit                         // commit without completing
	TxnCompleteRollback               // complete it, then roll back: nothing happened
)

// Constructors for writing programs by hand (the seed corpus). Each names the operations it
// stands for, and the step is found from the kind's own draw (encode): the encoding is the
// draws', written nowhere else. Spans are positions in the program package's scales
// (generate.TimedLeases, NearMargins, RealPauses, TxnWaits, TxnHolds, LaterDelays); a job is its
// position among the jobs enqueued so far.
func Enqueue(n int) Step { return Of("enqueue", program.Enqueue{N: n}) }
func Claim(w int) Step   { return Of("claim", program.Claim{S: worker(w)}) }
func Complete(w, back int) Step {
	return Of("complete", program.Complete{S: worker(w), Back: back})
}
func Expire(job int) Step  { return Of("expire", program.Expire{Job: jobAt(job)}) }
func Lock(l, job int) Step { return Of("lock", program.Lock{S: locker(l), Job: jobAt(job)}) }
func Release(l int, how End) Step {
	ends := map[End]program.Op{EndCommit: program.Commit{S: locker(l)}, EndRollback: program.Rollback{S: locker(l)},
		EndInterrupt: program.Interrupt{S: locker(l)}, EndTerminate: program.Terminate{S: locker(l)}}
	return Of("release", ends[how])
}
func Crash(w int) Step { return Of("crash", program.Crash{W: worker(w)}) }
func Drain(w int) Step { return Of("drain", program.Drain{S: worker(w)}) }
func Pause(w int) Step { return Of("pause", program.Pause{W: worker(w)}) }
func TimedClaim(w, lease int) Step {
	return Of("timed-claim", program.Claim{S: worker(w), Lease: generate.TimedLeases[lease]})
}
func Near(w, margin int, after bool) Step {
	return Of("near", program.Near{W: worker(w), Margin: generate.NearMargins[margin], After: after})
}
func Sleep(pause int) Step { return Of("real-pause", program.Sleep{D: generate.RealPauses[pause]}) }

// The lifecycle's steps: a failure of a worker's token (back places before its newest), final
// or retryable; a renewal; a worker's heartbeat; a job due after one of generate.LaterDelays;
// a completion with its business effect.
func Fail(w, back int, final bool) Step {
	return Of("fail", lifecycle.Fail{S: worker(w), Back: back, Final: final})
}
func Renew(w, back int) Step { return Of("renew", lifecycle.Renew{S: worker(w), Back: back}) }
func Heartbeat(w int) Step   { return Of("heartbeat", lifecycle.Heartbeat{S: worker(w)}) }
func Later(w, delay int) Step {
	return Of("enqueue-later", lifecycle.Later{S: worker(w), Delay: generate.LaterDelays[delay]})
}
func WithEffect(w, back int) Step {
	return Of("effect-complete", lifecycle.WithEffect{S: worker(w), Back: back})
}

func ClaimTxn(w, wait, hold, lease int, end TxnEnd) Step {
	return Of("fuzz-claim-txn", program.ClaimTxn{S: worker(w), Wait: generate.TxnWaits[wait], Hold: generate.TxnHolds[hold],
		Lease: generate.TimedLeases[lease], Complete: end != TxnCommit, Commit: end != TxnCompleteRollback})
}

func worker(i int) string { return program.WorkerName(i) }
func locker(i int) string { return program.LockerName(i) }
func jobAt(pos int) int64 { return encodingWorld.Jobs[pos] }

// encodingWorld is the world a step is found in: its jobs outnumber what one byte can name, so
// that a job's position is a digit of its own, as many jobs as a program has enqueued when it
// runs.
var encodingWorld = func() *program.World {
	w := &program.World{}
	for id := int64(1); id <= 256; id++ {
		w.Jobs = append(w.Jobs, id)
	}
	return w
}()

// Of is the step of the named kind whose draw, in encodingWorld, makes exactly ops: the
// smallest argument byte that decodes to them, so that each choice is its own digit in the
// order the draw makes it (generate.Arg). Job n is the n-th job enqueued. A kind without a
// constructor of its own is written with it: Of("cancel", lifecycle.Cancel{S: "w1", Job: 1}).
func Of(name string, ops ...program.Op) Step {
	c := code(name)
	for a := range 256 {
		s := Step{c, byte(a)}
		if got, _ := s.Ops(encodingWorld); reflect.DeepEqual(got, ops) {
			return s
		}
	}
	panic(fmt.Sprintf("fuzz: no argument byte of a %s step draws %v", name, ops))
}

// Ops decodes a step into the operations it stands for: its kind's draw, with the argument
// byte's digits as the choices, resolving job positions against the world. Most kinds are one
// operation; a few land one at a lease's edge (a claim, the pause to its edge, what lands
// there). The fuzzer's programs are the program package's operations. ok is false when the
// step names a job and there is none yet.
func (s Step) Ops(w *program.World) (ops []program.Op, ok bool) {
	k := generate.KindNamed(generate.FuzzCodes[int(s.Code)%len(generate.FuzzCodes)])
	ops = k.Draw(&generate.Draw{C: generate.NewArg(s.Arg), Dialect: generate.DialectFuzz, W: w})
	return ops, len(ops) > 0
}

// Run resets e and runs the steps that apply, stopping at the first violation or harness error.
func Run(ctx context.Context, e *sequential.Env, steps []Step) error {
	if err := e.Reset(ctx); err != nil {
		return &program.HarnessError{Err: err}
	}
	for _, s := range steps {
		ops, ok := s.Ops(e.W)
		if !ok || !ops[0].Applicable(e.W) {
			continue
		}
		// What follows a step's first operation runs where it applies: the first has changed
		// the state, as in the Prop state machine.
		for i, op := range ops {
			if i > 0 && !op.Applicable(e.W) {
				continue
			}
			if err := e.Step(ctx, op); err != nil {
				return err
			}
		}
	}
	return nil
}
