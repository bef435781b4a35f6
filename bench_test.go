package pgqcheck_test

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/sequential"
	"github.com/pgqcheck/pgqcheck/internal/suite"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// BenchmarkPropSteps measures the Prop state machine on the seed: operations per second, each
// followed by the snapshot comparison, resets included.
func BenchmarkPropSteps(b *testing.B) {
	ctx := context.Background()
	env, err := sequential.NewEnv(ctx, suttest.Install(b, sut.MustBuiltin(sut.DefaultQueue)), program.Workers, program.Lockers)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
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
			checks := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				f := suite.Find(b, m.Queue, suites(), realTime)
				if f == nil {
					b.Fatalf("mutant survived: %s", m.Bug)
				}
				checks += f.Checks
				b.ReportMetric(time.Since(start).Seconds(), "s/catch")
			}
			b.ReportMetric(float64(checks)/float64(b.N), "checks/catch")
		})
	}
}
