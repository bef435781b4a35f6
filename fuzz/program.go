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
	"strings"

	"pgqcheck/program"
)

// Sessions in a fuzzed program: as many as the Prop suite has, so a case found by either reads
// the same.
const (
	Workers = program.Workers
	Lockers = program.Lockers
)

// MaxSteps bounds a program, so one input cannot run for long.
const MaxSteps = 64

// Kind is an operation's code, the first byte of its step.
type Kind byte

// The operations, in encoding order. Adding one at the end keeps existing corpus files valid.
const (
	KEnqueue Kind = iota
	KClaim
	KComplete
	KExpire
	KLock
	KRelease
	KCrash
	KDrain
	KPause
	numKinds
)

// Step is one decoded operation whose argument byte has not met a state yet: job references
// are positions among the jobs enqueued so far, resolved when the step runs, so programs mean
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
		out = append(out, Step{Kind(b[i] % byte(numKinds)), b[i+1]})
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

// Constructors for writing programs by hand (the seed corpus).
func Enqueue(n int) Step                { return Step{KEnqueue, byte(n - 1)} }
func Claim(w int) Step                  { return Step{KClaim, byte(w)} }
func Complete(w, back int) Step         { return Step{KComplete, byte(w + Workers*back)} }
func Expire(job int) Step               { return Step{KExpire, byte(job)} }
func Lock(l, job int) Step              { return Step{KLock, byte(l + Lockers*job)} }
func Release(l int, h program.How) Step { return Step{KRelease, byte(l + Lockers*int(h))} }
func Crash(w int) Step                  { return Step{KCrash, byte(w)} }
func Drain(w int) Step                  { return Step{KDrain, byte(w)} }
func Pause(w int) Step                  { return Step{KPause, byte(w)} }

// Op resolves a step against the current state. ok is false when it names a job and there is
// none yet.
func (s Step) Op(e *program.Env) (op program.Op, ok bool) {
	a := int(s.Arg)
	job := func(i int) (int64, bool) {
		jobs := e.Model.Jobs()
		if len(jobs) == 0 {
			return 0, false
		}
		return jobs[i%len(jobs)].ID, true
	}
	switch s.Kind {
	case KEnqueue:
		return program.Enqueue{N: 1 + a%3}, true
	case KClaim:
		return program.Claim{W: a % Workers}, true
	case KComplete:
		return program.Complete{W: a % Workers, Back: (a / Workers) % 3}, true
	case KExpire:
		id, ok := job(a)
		return program.Expire{Job: id}, ok
	case KLock:
		id, ok := job(a / Lockers)
		return program.Lock{L: a % Lockers, Job: id}, ok
	case KRelease:
		return program.Release{L: a % Lockers, How: program.How((a / Lockers) % 4)}, true
	case KCrash:
		return program.Crash{W: a % Workers}, true
	case KDrain:
		return program.Drain{W: a % Workers}, true
	case KPause:
		return program.Pause{W: a % Workers}, true
	}
	return nil, false
}

// Run resets e and runs the steps that apply, stopping at the first violation or harness error.
func Run(ctx context.Context, e *program.Env, steps []Step) error {
	if err := e.Reset(ctx); err != nil {
		return &program.HarnessError{Err: err}
	}
	for _, s := range steps {
		op, ok := s.Op(e)
		if !ok || !op.Applicable(e) {
			continue
		}
		if err := e.Step(ctx, op); err != nil {
			return err
		}
	}
	return nil
}

// String prints steps abstractly (job positions, not ids), for corpus listings.
func String(steps []Step) string {
	var b strings.Builder
	for i, s := range steps {
		if i > 0 {
			b.WriteString("; ")
		}
		a := int(s.Arg)
		switch s.Kind {
		case KEnqueue:
			fmt.Fprintf(&b, "enqueue %d", 1+a%3)
		case KClaim:
			fmt.Fprintf(&b, "w%d claim", a%Workers)
		case KComplete:
			fmt.Fprintf(&b, "w%d complete newest-%d", a%Workers, (a/Workers)%3)
		case KExpire:
			fmt.Fprintf(&b, "expire job #%d", a)
		case KLock:
			fmt.Fprintf(&b, "locker%d lock job #%d", a%Lockers, a/Lockers)
		case KRelease:
			fmt.Fprintf(&b, "locker%d %s", a%Lockers, program.How((a/Lockers)%4))
		case KCrash:
			fmt.Fprintf(&b, "w%d crash", a%Workers)
		case KDrain:
			fmt.Fprintf(&b, "w%d drain", a%Workers)
		case KPause:
			fmt.Fprintf(&b, "w%d pause", a%Workers)
		}
	}
	return b.String()
}
