package pgqcheck_test

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/sut"
)

// BenchmarkPropSteps measures the Prop state machine on the seed: operations per second, each
// followed by the snapshot comparison, resets included.
func BenchmarkPropSteps(b *testing.B) {
	ctx := context.Background()
	env := newEnv(b, sut.MustBuiltin(sut.DefaultQueue))
	steps := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rapid.Check(b, func(t *rapid.T) {
			sequential.BeginRun(ctx, t, env)
			defer func() { steps += len(env.Trace) }()
			t.Repeat(sequential.StateMachine(ctx, env, false))
		})
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
	b.ReportMetric(float64(steps)/float64(b.N*100), "steps/run")
}

// BenchmarkMutantCatch measures, per mutant, the seconds and property runs until a random search
// from scratch catches it (shrinking and reduction excluded from neither: it is what a user waits).
func BenchmarkMutantCatch(b *testing.B) {
	for _, m := range propMutants(b) {
		// PropLeaseTime's mutants are searched for with real time, as that property does.
		realTime := m.Expects("PropLeaseTime")
		b.Run(m.Name, func(b *testing.B) {
			env := newEnv(b, m.Queue)
			checks := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				f, err := sequential.Search(context.Background(), env, b.Name(), realTime, 20*time.Second)
				if err != nil || f == nil {
					b.Fatalf("mutant survived: %s (%v)", m.Bug, err)
				}
				checks += f.Checks
				b.ReportMetric(time.Since(start).Seconds(), "s/catch")
			}
			b.ReportMetric(float64(checks)/float64(b.N), "checks/catch")
		})
	}
}
