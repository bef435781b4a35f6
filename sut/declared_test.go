package sut_test

import (
	"testing"
	"time"

	_ "github.com/pgqcheck/pgqcheck/internal/goqueues" // the Go queues register themselves when linked
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// form is what a queue must declare: everything the model and the modes read of it.
type form struct {
	order  model.Order
	shape  model.Shape
	lease  time.Duration
	opaque bool
}

// Every queue the suite ships or judges beside the built-ins declares what its files (or its Go
// definition) say, read through the one declaration; a queue added without an entry here, or an
// entry whose queue is gone, fails too.
func TestDeclarations(t *testing.T) {
	lock, lockRescue := model.Can{Lock: true}, model.Can{Lock: true, Rescue: true}
	want := map[string]form{
		"built-in seed":     {order: model.LowestID, shape: model.Shape{Can: lock}},
		"built-in split":    {order: model.Any, shape: model.Shape{Can: lock}},
		"built-in subquery": {order: model.LowestID, shape: model.Shape{Can: lock}},
		"built-in lifecycle": {order: model.LowestID, shape: model.Shape{Can: model.Can{Lock: true, Fail: true, Renew: true, Effect: true},
			Life: model.Lifecycle{MaxAttempts: 3, Backoff: 100 * time.Millisecond, Factor: 2}}},
		"at-least-once":       {order: model.LowestID, shape: model.Shape{Unfenced: true, Can: lock}},
		"claimed-executions":  {order: model.LowestID, shape: model.Shape{NoGeneration: true, Can: lock}},
		"deleted-uuid":        {order: model.LowestID, shape: model.Shape{DoneDeleted: true, Can: lock}, opaque: true},
		"deleted-text-tokens": {order: model.LowestID, shape: model.Shape{DoneDeleted: true, NoGeneration: true, Can: lock}, opaque: true},
		"rescued":             {order: model.LowestID, shape: model.Shape{RescueOnly: true, Can: lockRescue}, lease: time.Second},
		"rescued-retries": {order: model.LowestID, lease: time.Second, shape: model.Shape{RescueOnly: true, Can: model.Can{Lock: true, Rescue: true, Fail: true},
			Life: model.Lifecycle{MaxAttempts: 2, Backoff: 20 * time.Millisecond, Factor: 2, AttemptsAtClaim: true, LapsesCount: true, RescueBackoff: true}}},
		"heartbeat": {order: model.LowestID, shape: model.Shape{Can: model.Can{Lock: true, Heartbeat: true}, Life: model.Lifecycle{WorkerLease: true}}},
		"job-control": {order: model.LowestID, shape: model.Shape{Can: model.Can{Lock: true, Fail: true, Cancel: true, Snooze: true, Unique: true},
			Life: model.Lifecycle{MaxAttempts: 3, Backoff: 100 * time.Millisecond, Factor: 2}}},
		"registered txbound":               {order: model.LowestID, shape: model.Shape{TxBound: true}, lease: time.Hour},
		"registered effects":               {order: model.LowestID, shape: model.Shape{Can: model.Can{Lock: true, Effect: true}}},
		"registered txbound-commits-early": {order: model.LowestID, shape: model.Shape{TxBound: true}, lease: time.Hour},
	}
	variants, err := sut.Variants(suttest.ModuleDir(t, "."))
	if err != nil {
		t.Fatal(err)
	}
	var qs []*sut.Queue
	for _, n := range sut.Builtins() {
		qs = append(qs, sut.MustBuiltin(n))
	}
	qs = append(append(qs, variants...), sut.GoQueues()...)
	mutant, ok := sut.Registered("txbound-commits-early")
	if !ok {
		t.Fatal("the Go mutant txbound-commits-early is not registered")
	}
	qs = append(qs, mutant)
	seen := map[string]bool{}
	for _, q := range qs {
		key := q.Source
		if q.Dir() != "" {
			key = q.Name
		}
		seen[key] = true
		w, ok := want[key]
		if !ok {
			t.Errorf("%s: no declaration expected; add the queue's form to this test", key)
			continue
		}
		got := form{q.Order, q.Shape(), q.FixedLease, q.OpaqueIDs}
		if got != w {
			t.Errorf("%s declares %+v, want %+v", key, got, w)
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("%s: expected, but no such queue is shipped or registered", key)
		}
	}
}
