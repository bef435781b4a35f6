// Package linear checks concurrent histories of a queue against its specification
// (property 7 of the design reference): it records what concurrent sessions asked and were
// answered, and asks porcupine whether some order of those operations, consistent with the
// real-time order in which they ran, is a legal sequential run of the queue (model.Porcupine,
// with the relaxations documented there).
//
// Two modes produce histories, both running the program package's operations:
//
//   - Stress runs free traffic for a bounded time: workers, an enqueuer and a chaos goroutine
//     that expires leases, holds row locks open, cancels statements and terminates backends.
//     It finds races by volume; it does not replay.
//   - Scheduler.Property (and SearchScheduled outside go test) is a rapid property: rapid
//     draws short programs for two or three sessions and the interleaving of their
//     statements, so a failure replays from its draw, or from the program it is saved as
//     (its lines are the interleaving), and shrinks.
//
// Both end by draining the queue (program.Drain, the same procedure a sequential program
// runs) and call Check: linearizability of each job's operations, and Jepsen-style
// total-queue accounting. A failure is written by WriteReport to a folder holding the history,
// the failing job's operations, porcupine's timeline of that job, and the command that
// re-checks the history (CheckFile).
//
// The layers, as etcd's robustness tests split them:
//
//	history.go    the record: operations on one monotonic clock, JSON in and out
//	client.go     the only recorder: every session's statements, transactions resolved at their end
//	traffic.go    stress mode's workers and enqueuer, as actors running operations
//	chaos.go      stress mode's faults
//	stress.go     stress mode's run: start, stop, drain, verdict; and Throughput
//	schedule.go   scheduled mode's generator: the operations and their weights
//	scheduler.go  scheduled mode's execution: which session moves next, waits seen in Postgres
//	shrink.go     shrinking a scheduled run's choices (fuzz inputs)
//	validate.go   the checks: porcupine per job, total-queue accounting, counts
//	report.go     report folders, timelines, CheckFile
//	simulate.go   synthetic legal histories, for benchmarks and for testing the checker
package linear
