// Package linear checks concurrent histories of a queue against its specification
// (property 7 of the design reference): it records what concurrent sessions asked and were
// answered, and asks porcupine whether some order of those operations, consistent with the
// real-time order in which they ran, is a legal sequential run of the queue (model.Porcupine,
// with the relaxations documented there).
//
// Two modes produce histories:
//
//   - Stress runs free traffic for a bounded time: workers, an enqueuer and a chaos goroutine
//     that expires leases, holds row locks open, cancels statements and terminates backends.
//     It finds races by volume; it does not replay.
//   - Scheduler.Property (and SearchScheduled outside go test) is a rapid property: rapid
//     draws short programs for two or three sessions and the interleaving of their
//     statements, so a failure replays from its draw and shrinks.
//
// Both end by draining the queue and call Check: linearizability of each job's operations,
// and Jepsen-style total-queue accounting. A failure is written by WriteReport to a folder
// holding the history, the failing job's operations, porcupine's timeline of that job, and
// the command that re-checks the history (CheckFile).
//
// The layers, as etcd's robustness tests split them:
//
//	history.go    the record: operations on one monotonic clock, JSON in and out
//	client.go     traffic's client: a queue session that records every operation
//	traffic.go    stress mode's workers and enqueuer
//	chaos.go      stress mode's faults
//	stress.go     stress mode's run: start, stop, drain, verdict; and Throughput
//	schedule.go   scheduled mode's programs, as rapid draws them
//	scheduler.go  scheduled mode's execution: one statement per step, waits seen in Postgres
//	validate.go   the checks: porcupine per job, total-queue accounting, counts
//	report.go     report folders, timelines, CheckFile
//	simulate.go   synthetic legal histories, for benchmarks and for testing the checker
package linear
