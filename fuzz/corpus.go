package fuzz

//go:generate go test -run ^TestCorpusFiles$|^TestScheduledCorpus$ -update-corpus .

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/linear/schedule"
	"github.com/pgqcheck/pgqcheck/internal/program/lifecycle"
	"github.com/pgqcheck/pgqcheck/model"
)

// Entry is a hand-written program in the seed corpus: the seed's walkthrough and its release
// variants, which a correct queue must pass, and for each mutant under testdata/mutants the
// shortest program that catches it.
type Entry struct {
	Name     string
	Steps    []Step
	Mutant   string         // the mutant this program catches ("" for scenarios every correct queue passes)
	Property model.Property // the property the mutant breaks here
	// Or is the property the same break shows where another statement sees it first: a lease
	// shortened shows in the snapshot after the pause (database time) or, where that snapshot
	// landed before the shortened end, in the next claim (mutual exclusion). Which one sees it
	// depends on where in the claim's measured window the lease began.
	Or model.Property
}

// Breaks reports whether property p is one this entry's mutant may show here.
func (e Entry) Breaks(p model.Property) bool { return p == e.Property || e.Or != 0 && p == e.Or }

// Corpus lists the seed corpus. Every entry passes on a correct queue; a mutant's entry fails
// on that mutant (TestCorpusCatchesMutants keeps both true).
func Corpus() []Entry {
	seedWalkthrough := []Step{
		Enqueue(2),              // jobs 1 and 2
		Lock(0, 0),              // the manual-locker holds job 1
		Claim(0),                // 2|1: the locked job is skipped
		Release(0, EndRollback), // the locker rolls back
		Claim(0),                // 1|1
		Expire(0),               // job 1's lease runs out
		Claim(1),                // 1|2
		Complete(0, 0),          // generation 1: 0 rows
		Complete(1, 0),          // generation 2: 1 row
	}
	staleCompletion := []Step{Enqueue(1), Claim(1), Expire(0), Claim(0), Complete(1, 0)}
	return append([]Entry{
		{Name: "seed-walkthrough", Steps: seedWalkthrough},
		{Name: "seed-locker-cancelled", Steps: []Step{Enqueue(2), Lock(0, 0), Claim(0), Release(0, EndInterrupt), Claim(1), Complete(1, 0)}},
		{Name: "seed-locker-terminated", Steps: []Step{Enqueue(2), Lock(0, 0), Claim(0), Release(0, EndTerminate), Claim(1), Complete(1, 0)}},
		{Name: "seed-crash-and-drain", Steps: []Step{Enqueue(3), Claim(0), Claim(1), Crash(0), Pause(1), Drain(2)}},
		// Real time: w0's 100 ms lease runs out while it pauses (nothing expires it), w1 may
		// reclaim the job, w0's late completion changes nothing.
		{Name: "seed-lease-runs-out", Steps: []Step{Enqueue(2), TimedClaim(0, 0), Near(0, 0, true), Claim(1), Complete(0, 0), Complete(1, 0), Sleep(0)}},

		{Name: "mutant-claim-highest-id", Mutant: "claim-highest-id", Property: model.PClaimOrder,
			Steps: []Step{Enqueue(2), Claim(0)}},
		{Name: "mutant-claim-ignores-expired", Mutant: "claim-ignores-expired", Property: model.PRecovery,
			Steps: []Step{Enqueue(1), Claim(0), Expire(0), Claim(1)}},
		{Name: "mutant-claim-keeps-generation", Mutant: "claim-keeps-generation", Property: model.PGenerations,
			Steps: []Step{Enqueue(1), Claim(0), Expire(0), Claim(1)}},
		{Name: "mutant-claim-lease-backwards", Mutant: "claim-lease-backwards", Property: model.PDBTime,
			Steps: []Step{Enqueue(1), Claim(0)}},
		{Name: "mutant-claim-reopens-done", Mutant: "claim-reopens-done", Property: model.PDoneOnce,
			Steps: []Step{Enqueue(1), Claim(0), Complete(0, 0), Expire(0), Claim(1)}},
		{Name: "mutant-claim-skips-generation", Mutant: "claim-skips-generation", Property: model.PGenerations,
			Steps: []Step{Enqueue(1), Claim(0)}},
		{Name: "mutant-claim-takes-live-leases", Mutant: "claim-takes-live-leases", Property: model.PExclusion,
			Steps: []Step{Enqueue(1), Claim(0), Claim(1)}},
		{Name: "mutant-claim-without-limit", Mutant: "claim-without-limit", Property: model.PExclusion,
			Steps: []Step{Enqueue(2), Claim(0)}},
		{Name: "mutant-claim-without-skip-locked", Mutant: "claim-without-skip-locked", Property: model.PSkipLocked,
			Steps: []Step{Enqueue(1), Lock(0, 0), Claim(0)}},
		// The seed's hard case in five steps: w1 claims, its lease runs out, w0 reclaims, and w1's
		// late completion must change nothing.
		{Name: "mutant-complete-ignores-generation", Mutant: "complete-ignores-generation", Property: model.PFencing,
			Steps: staleCompletion},
		// The same in a queue that fences by a claim's token rather than a generation.
		{Name: "mutant-complete-ignores-token", Mutant: "complete-ignores-token", Property: model.PFencing,
			Steps: staleCompletion},
		// A job done and deleted is back in the queue's next snapshot.
		{Name: "mutant-deleted-job-comes-back", Mutant: "deleted-job-comes-back", Property: model.PDoneOnce,
			Steps: []Step{Enqueue(1), Claim(0), Complete(0, 0)}},
		// A transaction-bound claim that commits at once holds nothing: the job is free again
		// at the next snapshot.
		{Name: "mutant-txbound-commits-early", Mutant: "txbound-commits-early", Property: model.PRecovery,
			Steps: []Step{Enqueue(1), Claim(0)}},
		{Name: "mutant-complete-ignores-lease", Mutant: "complete-ignores-lease", Property: model.PFencing,
			Steps: []Step{Enqueue(1), Claim(0), Expire(0), Complete(0, 0)}},
		{Name: "mutant-complete-ignores-state", Mutant: "complete-ignores-state", Property: model.PDoneOnce,
			Steps: []Step{Enqueue(1), Claim(0), Complete(0, 0), Complete(0, 0)}},
		{Name: "mutant-complete-reports-without-change", Mutant: "complete-reports-without-change", Property: model.PDoneOnce,
			Steps: []Step{Enqueue(1), Claim(0), Complete(0, 0)}},
		// The mutants only real time shows, each with its shortest spans.
		{Name: "mutant-claim-expires-leases-early", Mutant: "claim-expires-leases-early", Property: model.PExclusion,
			Steps: []Step{Enqueue(2), TimedClaim(2, 0), Claim(0)}},
		{Name: "mutant-claim-shortens-lease", Mutant: "claim-shortens-lease", Property: model.PDBTime, Or: model.PExclusion,
			Steps: []Step{Enqueue(1), TimedClaim(0, 0), Near(0, 0, false), Claim(1)}},
		{Name: "mutant-claim-uses-now", Mutant: "claim-uses-now", Property: model.PFencing,
			Steps: []Step{Enqueue(3), ClaimTxn(1, 2, 0, 0, TxnCompleteCommit)}},
		{Name: "mutant-complete-uses-now", Mutant: "complete-uses-now", Property: model.PFencing,
			Steps: []Step{Enqueue(3), ClaimTxn(2, 0, 1, 0, TxnCompleteCommit)}},
		{Name: "mutant-complete-accepts-late-lease", Mutant: "complete-accepts-late-lease", Property: model.PFencing,
			Steps: []Step{Enqueue(1), TimedClaim(0, 0), Near(0, 0, true), Complete(0, 0)}},
	}, lifecycleCorpus()...)
}

// lifecycleCorpus is the lifecycle mutants' part of the corpus: the seed's hard case with a
// failure or a renewal in place of the stale completion; a lapsed lease renewed; a job failing
// past its limit, or dead and claimed again; a claim before a run-at time or a backoff's end; a
// failure the drain cannot account for; a worker's heartbeat after its lease lapsed; a job whose
// next attempt got stuck after a failure, which the drain's rescue must make dead; a stale
// worker's completion with its business effect, which refused must leave none.
func lifecycleCorpus() []Entry {
	snooze := func(w string) Step { return Of("snooze", lifecycle.Snooze{S: w, Delay: generate.LaterDelays[0]}) }
	unique := Of("enqueue-unique", lifecycle.EnqueueUnique{S: "w0", Key: 0})
	staleEffect := []Step{Enqueue(1), Claim(0), Pause(0), Claim(1), WithEffect(0, 0)}
	return []Entry{
		{Name: "mutant-fail-ignores-generation", Mutant: "fail-ignores-generation", Property: model.PWriteFencing,
			Steps: []Step{Enqueue(1), Claim(1), Expire(0), Claim(0), Fail(1, 0, false)}},
		{Name: "mutant-renew-ignores-generation", Mutant: "renew-ignores-generation", Property: model.PWriteFencing,
			Steps: []Step{Enqueue(1), Claim(1), Expire(0), Claim(0), Renew(1, 0)}},
		{Name: "mutant-renew-revives-lapsed", Mutant: "renew-revives-lapsed", Property: model.PRenewal,
			Steps: []Step{Enqueue(1), Claim(0), Expire(0), Renew(0, 0)}},
		{Name: "mutant-retry-past-attempt-limit", Mutant: "retry-past-attempt-limit", Property: model.PRetries,
			Steps: []Step{Enqueue(1), Claim(0), Fail(0, 0, false), Sleep(2), Claim(1), Fail(1, 0, false), Sleep(2), Sleep(2), Claim(2), Fail(2, 0, false)}},
		{Name: "mutant-dead-job-comes-back", Mutant: "dead-job-comes-back", Property: model.PRetries,
			Steps: []Step{Enqueue(1), Claim(0), Fail(0, 0, true), Sleep(2), Claim(1)}},
		{Name: "mutant-claim-before-run-at", Mutant: "claim-before-run-at", Property: model.PScheduling,
			Steps: []Step{Later(0, 2), Claim(0)}},
		{Name: "mutant-fail-without-backoff", Mutant: "fail-without-backoff", Property: model.PScheduling,
			Steps: []Step{Enqueue(1), Claim(0), Fail(0, 0, false), Claim(1)}},
		{Name: "mutant-fail-loses-job", Mutant: "fail-loses-job", Property: model.PDrain,
			Steps: []Step{Enqueue(1), Claim(0), Fail(0, 0, false), Drain(1)}},
		{Name: "mutant-heartbeat-revives-lapsed", Mutant: "heartbeat-revives-lapsed", Property: model.PRenewal,
			Steps: []Step{Enqueue(1), Claim(0), Expire(0), Heartbeat(0)}},
		{Name: "mutant-rescue-retries-exhausted", Mutant: "rescue-retries-exhausted", Property: model.PRetries,
			Steps: []Step{Enqueue(1), Claim(0), Fail(0, 0, false), Sleep(1), Claim(1), Drain(0)}},
		{Name: "mutant-effect-own-transaction", Mutant: "effect-own-transaction", Property: model.PEffects,
			Steps: staleEffect},
		{Name: "mutant-effect-kept-on-refusal", Mutant: "effect-kept-on-refusal", Property: model.PEffects,
			Steps: staleEffect},
		{Name: "mutant-cancel-skips-running", Mutant: "cancel-skips-running", Property: model.PCancel,
			Steps: []Step{Enqueue(1), Claim(0), Of("cancel", lifecycle.Cancel{S: "w1", Job: 1})}},
		{Name: "mutant-complete-after-cancel", Mutant: "complete-after-cancel", Property: model.PCancel,
			Steps: []Step{Enqueue(1), Claim(0), Of("cancel", lifecycle.Cancel{S: "w1", Job: 1}), Complete(0, 0)}},
		{Name: "mutant-claim-takes-cancelled", Mutant: "claim-takes-cancelled", Property: model.PCancel,
			Steps: []Step{Enqueue(1), Of("cancel", lifecycle.Cancel{S: "w1", Job: 1}), Claim(0)}},
		{Name: "mutant-snooze-ignores-generation", Mutant: "snooze-ignores-generation", Property: model.PSnooze,
			Steps: []Step{Enqueue(1), Claim(1), Expire(0), Claim(0), snooze("w1")}},
		{Name: "mutant-snooze-spends-attempt", Mutant: "snooze-spends-attempt", Property: model.PSnooze,
			Steps: []Step{Enqueue(1), Claim(0), snooze("w0")}},
		{Name: "mutant-snooze-gives-back-attempt", Mutant: "snooze-gives-back-attempt", Property: model.PSnooze,
			Steps: []Step{Enqueue(1), Claim(0), snooze("w0")}},
		{Name: "mutant-unique-ignores-running", Mutant: "unique-ignores-running", Property: model.PUnique,
			Steps: []Step{unique, Claim(0), unique}},
		{Name: "mutant-unique-holds-finished", Mutant: "unique-holds-finished", Property: model.PUnique,
			Steps: []Step{unique, Claim(0), Complete(0, 0), unique}},
	}
}

// CorpusDir is where `go test` looks for FuzzQueue's seed corpus, relative to this package.
var CorpusDir = filepath.Join("testdata", "fuzz", "FuzzQueue")

// ScheduledCorpusDir holds FuzzScheduled's seed corpus: scheduled runs' choices, each the shrunk
// run that catches one mutant (see schedule.Scheduler.RunBytes).
var ScheduledCorpusDir = filepath.Join("testdata", "fuzz", "FuzzScheduled")

// FileContent is a corpus file in the format `go test` reads (go test fuzz v1).
func FileContent(steps []Step) []byte { return schedule.CorpusFile(Encode(steps)) }

// ReadInputFile reads a corpus file holding one []byte, as `go test` and the fuzzer write them.
func ReadInputFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		return nil, fmt.Errorf("%s: not a corpus file of one []byte (go test fuzz v1)", path)
	}
	q, ok := strings.CutPrefix(lines[1], "[]byte(")
	q, ok2 := strings.CutSuffix(q, ")")
	data, err := strconv.Unquote(q)
	if !ok || !ok2 || err != nil {
		return nil, fmt.Errorf("%s: line 2 is not []byte(\"...\")", path)
	}
	return []byte(data), nil
}
