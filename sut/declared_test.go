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
	order              model.Order
	shape              model.Shape
	lease              time.Duration
	opaque             bool
	canLock, canRescue bool
}

// Every queue the suite ships or judges beside the built-ins declares what its files (or its Go
// definition) say, read through the one declaration; a queue added without an entry here, or an
// entry whose queue is gone, fails too.
func TestDeclarations(t *testing.T) {
	want := map[string]form{
		"built-in seed":     {order: model.LowestID, canLock: true},
		"built-in split":    {order: model.Any, canLock: true},
		"built-in subquery": {order: model.LowestID, canLock: true},
		"built-in lifecycle": {order: model.LowestID, canLock: true, shape: model.Shape{Life: model.Lifecycle{
			On: true, MaxAttempts: 3, Backoff: 100 * time.Millisecond, Factor: 2, Renews: true, Effects: true}}},
		"at-least-once":       {order: model.LowestID, shape: model.Shape{Unfenced: true}, canLock: true},
		"claimed-executions":  {order: model.LowestID, shape: model.Shape{NoGeneration: true}, canLock: true},
		"deleted-uuid":        {order: model.LowestID, shape: model.Shape{DoneDeleted: true}, opaque: true, canLock: true},
		"deleted-text-tokens": {order: model.LowestID, shape: model.Shape{DoneDeleted: true, NoGeneration: true}, opaque: true, canLock: true},
		"rescued":             {order: model.LowestID, shape: model.Shape{RescueOnly: true}, lease: time.Second, canLock: true, canRescue: true},
		"rescued-retries": {order: model.LowestID, lease: time.Second, canLock: true, canRescue: true, shape: model.Shape{RescueOnly: true,
			Life: model.Lifecycle{On: true, MaxAttempts: 2, Backoff: 20 * time.Millisecond, Factor: 2, AttemptsAtClaim: true, LapsesCount: true, RescueBackoff: true}}},
		"heartbeat":                        {order: model.LowestID, shape: model.Shape{Life: model.Lifecycle{Renews: true, WorkerLease: true}}, canLock: true},
		"registered txbound":               {order: model.LowestID, shape: model.Shape{TxBound: true}, lease: time.Hour},
		"registered effects":               {order: model.LowestID, shape: model.Shape{Life: model.Lifecycle{Effects: true}}, canLock: true},
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
		got := form{q.Order, q.Shape(), q.FixedLease, q.OpaqueIDs, q.CanLock(), q.CanRescue()}
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
