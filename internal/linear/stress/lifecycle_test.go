package stress

import (
	"context"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/generate"
	_ "github.com/pgqcheck/pgqcheck/internal/goqueues" // the Go queues, mutants with them
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestStressLifecycle: on the lifecycle queue, stress workers fail jobs (some for good), renew
// leases and complete with business effects, and the enqueuer schedules jobs for later, beside
// the usual claims, completions and chaos; the history checks, and the drain, which waits for
// the last scheduled job, accounts for every job as done or dead.
func TestStressLifecycle(t *testing.T) {
	in := suttest.Install(t, sut.MustBuiltin("lifecycle"))
	res, err := Run(context.Background(), in, Config{Workers: 4, Duration: 2 * time.Second, ReportDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if res.Failed() {
		t.Fatalf("%s\n%s", res, res.Verdict.Explanation)
	}
	c := res.Counts
	if c.Failures == 0 || c.Renewals == 0 || c.Effects == 0 || c.Scheduled == 0 {
		t.Fatalf("%d failures, %d renewals, %d effects, %d scheduled: stress no longer draws the lifecycle", c.Failures, c.Renewals, c.Effects, c.Scheduled)
	}
}

// The business table read after the drain judges the effects: a worker whose effect commits
// in a transaction of its own before a completion that may be refused leaves effects no
// committed completion carried.
func TestStressEffectOwnTransaction(t *testing.T) {
	q, ok := sut.Registered("effect-own-transaction")
	if !ok {
		t.Fatal("no Go queue effect-own-transaction")
	}
	defer func(l generate.Weights) { generate.LifeWeights = l }(generate.LifeWeights)
	generate.LifeWeights = generate.Weights{"as before": 1, "effect": 1}
	res, err := Run(context.Background(), suttest.Install(t, q), Config{Workers: 4, Duration: 2 * time.Second, ReportDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if !res.Failed() {
		t.Fatalf("stress let the effect committed before its completion pass (%d effects)", res.Counts.Effects)
	}
}
