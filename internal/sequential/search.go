package sequential

import (
	"context"
	"errors"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/verdict"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// FindingOf turns the failing run env holds (rapid's final replay of its shrunk case) into a
// Finding, after reducing its program within budget. It returns nil when the failure is the
// harness's rather than the queue's.
func FindingOf(ctx context.Context, env *Env, budget time.Duration) *verdict.Finding {
	ops, err := ReduceSequential(ctx, env, env.Executed(), budget)
	f := &verdict.Finding{Queue: env.In.Queue.Name, Source: env.In.Queue.Source, Mode: program.Sequential}
	var v *model.Violation
	switch {
	case errors.As(err, &v):
	case errors.As(env.Last, &v):
		// The reduced replay did not fail again: keep what rapid saw, marked as flaky.
		f.Flaky = true
	default:
		return nil
	}
	f.Violation = v
	f.Program = &program.Program{Header: map[string]string{}, Ops: ops}
	f.Program.SetVerdict(v)
	f.Trace = env.Program()
	f.Model = env.Model.String()
	return f
}

// SeqSearch is one search of the Prop state machine on an Env under rapid: the property rapid
// checks, run after run, and what it kept of the first run that failed, for when rapid's replay
// of its shrunk case does not fail again.
type SeqSearch struct {
	// OnFailure, when set, is given the first failing run as it ran, before rapid shrinks it.
	OnFailure func(unreduced *verdict.Finding)

	env      *Env
	realTime bool
	runs     int
	failedAt int              // the first failing run, counted from 1; 0 while every run passed
	firstOps []program.Op     // that run's operations
	first    *verdict.Finding // what that run broke, unreduced; nil when it failed in the harness
}

// NewSeqSearch prepares a search on env, with leases that end by themselves and real pauses
// (property 8) when realTime is set.
func NewSeqSearch(env *Env, realTime bool) *SeqSearch {
	return &SeqSearch{env: env, realTime: realTime}
}

// Run is one run of the property: the queue reset, then the state machine. wrap, when not nil,
// wraps each of the machine's actions (a campaign counts their operations with it).
func (s *SeqSearch) Run(ctx context.Context, t *rapid.T, wrap func(action func(*rapid.T)) func(*rapid.T)) {
	s.runs++
	completed := false
	defer func() {
		if !completed && s.failedAt == 0 {
			s.failedAt, s.firstOps, s.first = s.runs, s.env.Executed(), Unreduced(s.env)
			if s.OnFailure != nil && s.first != nil {
				s.OnFailure(s.first)
			}
		}
	}()
	BeginRun(ctx, t, s.env)
	actions := StateMachine(ctx, s.env, s.realTime)
	if wrap != nil {
		for key, action := range actions {
			if key != "" { // rapid's check after every action
				actions[key] = wrap(action)
			}
		}
	}
	t.Repeat(actions)
	completed = true
}

// Finding is the failure of a search whose property failed, its program reduced within reduce:
// rapid's shrunk case (env holds its final replay). When that one's replay does not fail again,
// it is the first failing run, replayed and reduced, or else as it ran: real time decides which
// check lands first past a lease's edge, and what the first run saw is a broken promise all the
// same, since the model judges only by measured windows. Those are marked Flaky. Finding is nil
// when no run broke a property: the harness failed (env.Last says how when it was the last run).
func (s *SeqSearch) Finding(ctx context.Context, reduce time.Duration) *verdict.Finding {
	env := s.env
	f := FindingOf(ctx, env, reduce)
	if (f == nil || f.Flaky) && s.firstOps != nil {
		_ = Replay(ctx, env, s.firstOps)
		if g := FindingOf(ctx, env, reduce); g != nil {
			f = g
			f.Flaky = true
		}
	}
	if f == nil && s.first != nil {
		f = s.first
		f.Flaky = true
	}
	if f != nil {
		f.Checks = s.failedAt
	}
	return f
}

// Unreduced is the failing run env holds, as it ran: nil when it broke no property.
func Unreduced(env *Env) *verdict.Finding {
	var v *model.Violation
	if !errors.As(env.Last, &v) {
		return nil
	}
	p := &program.Program{Header: map[string]string{}, Ops: env.Executed()}
	p.SetVerdict(v)
	return &verdict.Finding{Violation: v, Queue: env.In.Queue.Name, Source: env.In.Queue.Source, Mode: program.Sequential,
		Program: p, Trace: env.Program(), Model: env.Model.String()}
}
