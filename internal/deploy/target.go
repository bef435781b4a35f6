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
	// in another language (argv).
	WorkCommand []string
	// IgnoreContext: the handler works on after its library cancels its context.
	IgnoreContext bool
	// The run's shape where a Config leaves it unset: how many worker processes, how long the
	// window, each execution's work, and whether stalls are aimed at a job's retaking (a
	// horizon too long and uneven for a drawn stall to end while the job's next worker holds
	// it). WorkMS's zero value is the run's default.
	Workers int
	Window  time.Duration
	WorkMS  [2]int64
	Aim     bool
	// MaxAttempts is the attempts the queue's configuration allows a job (0: no limit), which
	// the checks of observed executions judge (property 12).
	MaxAttempts int64
	// Scheduled: the queue takes a run-at time, so the workload gives some jobs one, and no
	// execution may begin before it (property 14).
	Scheduled bool
	// Patience bounds how long the drain waits for a job to finish (0: from the horizon).
	Patience time.Duration
	// External: the handler writes its business effect to the run's HTTP destination (one
	// that applies every call: a destination with no fencing), where it cannot commit with the
	// completion; ByKey: it names the job there by the workload's key's number.
	External, ByKey bool
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
