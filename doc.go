// Package pgqcheck proves, or refutes, that a PostgreSQL job queue keeps its promises.
//
// It runs a reference model of the queue beside a real Postgres, under randomized
// interleavings of claims, row locks, pauses, lease expiries and completions, and checks the
// recorded concurrent histories for linearizability; above all, that no stale generation ever
// completes a job. Every failure names the numbered property it breaks, shows the shortest
// program that still breaks it, and is saved as a regression case that the next go test
// replays.
//
// Judge a queue from a test of your own module:
//
//	func TestQueue(t *testing.T) {
//		pgqcheck.Judge(t, pgqcheck.SQLDir("queue/sql"))
//	}
//
// A queue is a folder of SQL files (SQLDir; the contract is in docs/contract.md of this
// module) or a queue written in Go (GoQueue, which takes the sut.GoQueue interface). Judge
// runs the same suites as this module's own tests: Prop (the model and the queue side by side,
// one operation at a time, with and without real-time leases) and Linear (free-running stress
// traffic with faults, and scheduled interleavings that shrink), then prints the verdict, one
// line per property. Options choose the modes, a time budget, the Postgres to use, the corpus
// folder and the seed.
//
// Postgres comes from PGQCHECK_PG as for this module's tests: an existing server
// (PGQCHECK_DSN, or the WithPostgres option), a local Docker image, or a throwaway cluster from the
// machine's own PostgreSQL binaries; every database, cluster and container Judge starts is
// removed when it ends. A test binary that judges several queues can share one server between
// them with Main in its TestMain.
//
// The suite's own tests live beside this file: props_test.go (go test -run Prop) and
// linearize_test.go (go test -run Linear) judge the built-in queues and the suite's mutants.
package pgqcheck
