// Package check judges a recorded history against the queue's specification (property 7 of
// the design reference, and the others a concurrent run can break), assumption checks first,
// as etcd's robustness tests validate:
//
//   - the history's shape (wellFormed): what porcupine takes for granted;
//   - linearizability of each job's operations, with porcupine and model.Porcupine, and an
//     explanation of the first job that has none;
//   - for a drained run, Jepsen-style total-queue accounting (Account): every acknowledged job
//     completed exactly once, none lost, none duplicated, none unexpected, none stale;
//   - recovery after uncertain answers (recovery.go) and what a server crash may not undo
//     (crash.go).
//
// Check runs them all and returns a Verdict, a value from detection to printing. CountOps
// counts what a history exercised; Simulate makes long legal histories for benchmarks and for
// testing the checker itself.
package check
