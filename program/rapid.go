package program

import (
	"context"
	"errors"
	"fmt"

	"pgregory.net/rapid"

	"pgqcheck/model"
)

// StateMachine returns rapid state-machine actions that draw operations against e and run them.
// realTime adds claims with a short real lease. The "" action is the invariant: the queue's snapshot equals the model after every step.
func StateMachine(ctx context.Context, e *Env, realTime bool) map[string]func(*rapid.T) {
	step := func(t *rapid.T, op Op) {
		if !op.Applicable(e) {
			t.Skip("not applicable: " + op.String())
		}
		if err := e.Step(ctx, op); err != nil {
			Fail(t, e, err)
		}
	}
	worker := func(t *rapid.T) int { return rapid.IntRange(0, len(e.Workers)-1).Draw(t, "worker") }
	job := func(t *rapid.T) int64 {
		jobs := e.Model.Jobs()
		if len(jobs) == 0 {
			t.Skip("no jobs yet")
		}
		ids := make([]int64, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		return rapid.SampledFrom(ids).Draw(t, "job")
	}
	// rare gates an action to about one draw in n, so slow operations stay a small share of steps.
	rare := func(t *rapid.T, n int) {
		if rapid.IntRange(1, n).Draw(t, "gate") != 1 {
			t.Skip("gated")
		}
	}
	actions := map[string]func(*rapid.T){
		"enqueue": func(t *rapid.T) { step(t, Enqueue{N: rapid.IntRange(1, 3).Draw(t, "n")}) },
		"claim":   func(t *rapid.T) { step(t, Claim{W: worker(t)}) },
		"complete": func(t *rapid.T) {
			step(t, Complete{W: worker(t), Back: rapid.IntRange(0, 2).Draw(t, "back")})
		},
		"expire": func(t *rapid.T) { step(t, Expire{Job: job(t)}) },
		"crash":  func(t *rapid.T) { step(t, Crash{W: worker(t)}) },
		"pause":  func(t *rapid.T) { step(t, Pause{W: worker(t)}) },
		"drain": func(t *rapid.T) {
			rare(t, 4)
			step(t, Drain{W: worker(t)})
		},
		"": func(t *rapid.T) {
			if err := e.Check(ctx); err != nil {
				Fail(t, e, err)
			}
		},
	}
	// Real-time leases cost a real pause each; they get their own property so that the main
	// one stays fast to run and to shrink.
	if realTime {
		actions["short-lease"] = func(t *rapid.T) {
			rare(t, 3)
			step(t, ShortLease{W: worker(t), Late: rapid.Bool().Draw(t, "late")})
		}
	}
	if e.CanLock() && len(e.Lockers) > 0 {
		locker := func(t *rapid.T) int { return rapid.IntRange(0, len(e.Lockers)-1).Draw(t, "locker") }
		actions["lock"] = func(t *rapid.T) { step(t, Lock{L: locker(t), Job: job(t)}) }
		actions["release"] = func(t *rapid.T) {
			how := How(rapid.IntRange(int(Commit), int(Terminate)).Draw(t, "how"))
			step(t, Release{L: locker(t), How: how})
		}
	}
	return actions
}

// Fail stops the run with the violated property, the program so far and the snapshot. Each
// property fails from its own line, so rapid's shrinker (which keeps only candidates that fail
// with the same stack) shrinks toward the same broken promise rather than any failure.
func Fail(t *rapid.T, e *Env, err error) {
	t.Helper()
	msg := Report(e, err)
	var v *model.Violation
	if !errors.As(err, &v) {
		t.Fatalf("%s", msg)
	}
	switch v.Property {
	case model.PClaimOrder:
		t.Fatalf("%s", msg)
	case model.PFencing:
		t.Fatalf("%s", msg)
	case model.PExclusion:
		t.Fatalf("%s", msg)
	case model.PGenerations:
		t.Fatalf("%s", msg)
	case model.PDoneOnce:
		t.Fatalf("%s", msg)
	case model.PSkipLocked:
		t.Fatalf("%s", msg)
	case model.PRecovery:
		t.Fatalf("%s", msg)
	case model.PDBTime:
		t.Fatalf("%s", msg)
	default:
		t.Fatalf("%s", msg)
	}
}

// Report is the failure text: the verdict, the numbered program with the queue's answers, and
// what the model expected the queue to hold.
func Report(e *Env, err error) string {
	return fmt.Sprintf("%v\nqueue: %s\nprogram (queue's answers):\n%smodel now: %v\n",
		err, e.In.Queue.Source, e.Program(), e.Model.Snapshot(e.Now))
}
