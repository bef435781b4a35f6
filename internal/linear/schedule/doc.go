// Package schedule is scheduled mode: short programs for two or three sessions whose
// interleaving is drawn, one statement at a time, so that a failure replays exactly and
// shrinks. A sequential prefix of operations and, for each session, a suffix are drawn
// through a chooser (rapid under `go test` and campaigns, a fuzz input's bytes under
// FuzzScheduled); then, at each step, which session issues its next statement, or which one a
// fault hits. The operations are the program package's, bound to sessions s0, s1, s2; what
// ran is saved as a program whose lines are the interleaving, and runs again from it.
//
// The Scheduler sees a statement wait for a row lock in Postgres (pg_blocking_pids) rather
// than guessing with sleeps, and moves on once every statement in flight has returned or
// waits behind a session that is not itself waiting. Each run ends by draining the queue and
// checking the history (package check); a failure writes a report folder (package report)
// with the program and the fuzz input that replay it.
//
// The files follow a run: draw.go and choose.go draw the program, drive.go runs it drawn or
// replayed, run.go issues its steps, interleave.go interleaves and quiesces, faults.go
// injects the faults, trace.go writes the trace, failure.go reports a failure; search.go and
// shrink.go search, replay, reduce and shrink outside `go test`.
package schedule
