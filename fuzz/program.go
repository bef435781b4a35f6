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
	"slices"

	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/program"
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

// Kind is an operation's code, the first byte of its step: the position of its kind in
// generate.FuzzCodes, the encoding's order.
type Kind byte

// code is the named kind's code.
func code(name string) Kind {
	i := slices.Index(generate.FuzzCodes, name)
	if i < 0 {
		panic("fuzz: no kind " + name + " in generate.FuzzCodes")
	}
	return Kind(i)
}

// Step is two bytes of fuzz input: an operation's code and its argument. It is an encoding,
// not an operation: Op decodes it into one of the program package's operations, resolving job
// references (positions among the jobs enqueued so far) when the step runs, so programs mean
// the same on any queue whatever ids it hands out.
type Step struct {
	Kind Kind
	Arg  byte
}

// Decode turns fuzz bytes into steps: two bytes each, an odd trailing byte ignored, at most
// MaxSteps.
func Decode(b []byte) []Step {
	var out []Step
	for i := 0; i+1 < len(b) && len(out) < MaxSteps; i += 2 {
		out = append(out, Step{Kind(b[i] % byte(len(generate.FuzzCodes))), b[i+1]})
	}
	return out
}

// Encode is Decode's inverse.
func Encode(steps []Step) []byte {
	out := make([]byte, 0, 2*len(steps))
	for _, s := range steps {
		out = append(out, byte(s.Kind), s.Arg)
	}
	return out
}

// How a locker's transaction ends, in the encoding's order.
type End int

const (
	EndCommit End = iota
	EndRollback
	EndCancel
	EndTerminate
)

// How a claim transaction ends, in the encoding's order.
type TxnEnd int

const (
	TxnCompleteCommit   TxnEnd = iota // complete the claimed job, commit
	TxnCommit                         // commit without completing
	TxnCompleteRollback               // complete it, then roll back: nothing happened
)

// Constructors for writing programs by hand (the seed corpus): each encodes its arguments as
// the kind's draw decodes them (generate.Arg: the first choice is the lowest digit). Spans are
// positions in the program package's scales (generate.TimedLeases, NearMargins, RealPauses,
// TxnWaits, TxnHolds).
func Enqueue(n int) Step          { return Step{code("enqueue"), byte(n - 1)} }
func Claim(w int) Step            { return Step{code("claim"), byte(w)} }
func Complete(w, back int) Step   { return Step{code("complete"), byte(w + Workers*back)} }
func Expire(job int) Step         { return Step{code("expire"), byte(job)} }
func Lock(l, job int) Step        { return Step{code("lock"), byte(l + Lockers*job)} }
func Release(l int, how End) Step { return Step{code("release"), byte(l + Lockers*int(how))} }
func Crash(w int) Step            { return Step{code("crash"), byte(w)} }
func Drain(w int) Step            { return Step{code("drain"), byte(w)} }
func Pause(w int) Step            { return Step{code("pause"), byte(w)} }
func TimedClaim(w, lease int) Step {
	return Step{code("timed-claim"), byte(w + Workers*lease)}
}
func Near(w, margin int, after bool) Step {
	a := w + Workers*margin
	if after {
		a += Workers * len(generate.NearMargins)
	}
	return Step{code("near"), byte(a)}
}
func Sleep(pause int) Step { return Step{code("real-pause"), byte(pause)} }

// The lifecycle's steps: a failure of a worker's token (back places before its newest), final
// or retryable; a renewal; a worker's heartbeat; a job due after one of generate.LaterDelays;
// a completion with its business effect.
func Fail(w, back int, final bool) Step {
	a := w + Workers*back
	if final {
		a += Workers * 2 * 3
	}
	return Step{code("fail"), byte(a)}
}
func Renew(w, back int) Step      { return Step{code("renew"), byte(w + Workers*back)} }
func Heartbeat(w int) Step        { return Step{code("heartbeat"), byte(w)} }
func Later(w, delay int) Step     { return Step{code("enqueue-later"), byte(w + Workers*delay)} }
func WithEffect(w, back int) Step { return Step{code("effect-complete"), byte(w + Workers*back)} }
func ClaimTxn(w, wait, hold, lease int, end TxnEnd) Step {
	nw, nh, nl := len(generate.TxnWaits), len(generate.TxnHolds), len(generate.TimedLeases)
	a := w + Workers*(wait+nw*(hold+nh*(lease+nl*int(end))))
	if a > 255 {
		// A rolled-back transaction with a long lease and long waits does not fit one byte.
		panic(fmt.Sprintf("fuzz.ClaimTxn(%d, %d, %d, %d, %d): argument %d does not fit a byte", w, wait, hold, lease, end, a))
	}
	return Step{code("fuzz-claim-txn"), byte(a)}
}

// Ops decodes a step into the operations it stands for: its kind's draw, with the argument
// byte's digits as the choices, resolving job positions against the world. Most kinds are one
// operation; a few land one at a lease's edge (a claim, the pause to its edge, what lands
// there). The fuzzer's programs are the program package's operations. ok is false when the
// step names a job and there is none yet.
func (s Step) Ops(w *program.World) (ops []program.Op, ok bool) {
	k := generate.KindNamed(generate.FuzzCodes[int(s.Kind)%len(generate.FuzzCodes)])
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
