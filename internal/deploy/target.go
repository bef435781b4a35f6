package deploy

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Target is a queue as it is deployed: the program that plays each role of the worker
// protocol (built from a main package of the pgqcheck module or of one of its adapters
// modules), the settings its workers run with, and what the queue promises, which the checks
// judge by.
type Target struct {
	Name   string // what --deploy names it
	Source string // where the queue comes from, for reports
	// Module is the Go module the program is built in, as a folder from the pgqcheck
	// module's root ("." for the core module), and Package its main package there.
	Module, Package string
	// Queue is the queue folder (or built-in name) the program runs, for a queue of SQL.
	Queue string
	// Shape is what the queue promises and how it is built, as every mode's checks read it.
	Shape model.Shape
	// Lease is the lease a claim asks for; Horizon how long a job stays with a worker that
	// holds it before the queue may give it to another (the lease, or the rescuer's horizon
	// and its interval).
	Lease, Horizon time.Duration
	// Settings are the library's own, passed to its workers (protocol.Config.Settings).
	Settings map[string]int64
	// WorkCommand, when set, runs the workers instead of the program's work role: a worker
	// in another language (argv; the program's path is appended as its last argument when
	// the command's first element is empty).
	WorkCommand []string
}

// SQLTarget deploys a queue folder of SQL with the core module's SQL worker. lease is what
// each claim asks for (the queue's own where it fixes it).
func SQLTarget(q *sut.Queue, lease time.Duration) (Target, error) {
	if why := q.OwnIdentity(); why != "" {
		return Target{}, fmt.Errorf("pgqcheck: cannot deploy %s: %s; the deployment mode's SQL worker runs queues whose ids and generations are columns of their own", q.Source, why)
	}
	if q.FixedLease > 0 {
		lease = q.FixedLease
	}
	src := q.Name // a built-in, which the program carries
	if dir := q.Dir(); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return Target{}, err
		}
		src = abs
	}
	return Target{Name: q.Name, Source: q.Source, Module: ".", Package: "internal/deploy/sqlworker", Queue: src,
		Shape: q.Shape(), Lease: lease, Horizon: lease}, nil
}
