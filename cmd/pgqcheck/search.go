package main

import (
	"context"
	"flag"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"pgregory.net/rapid"

	"pgqcheck/program"
)

// The Prop suite's property name (props_test.go): a case saved here replays under `go test`
// only under the same test name.
const propTest = "TestPropQueue"

// Tally is what a campaign's workers have done so far, updated as operations run so the progress
// line moves during long rounds.
type Tally struct {
	mu         sync.Mutex
	checks     int64 // property runs (sequential) that completed or failed, shrinking aside
	ops        int64
	histories  int64 // concurrent histories checked (stress modes)
	shrinkRuns int64
	shrinking  int // workers currently minimising a failure
	counts     Counts
}

// TallySnapshot is a copy of a Tally's numbers.
type TallySnapshot struct {
	Checks, Ops, Histories, ShrinkRuns int64
	Shrinking                          int
	Counts                             Counts
}

func (t *Tally) Snapshot() TallySnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return TallySnapshot{t.checks, t.ops, t.histories, t.shrinkRuns, t.shrinking, t.counts}
}

// Observe adds the steps of a program being searched and what they exercised.
func (t *Tally) Observe(steps int, c program.Counts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ops += int64(steps)
	t.counts.Counts.Add(c)
}

// AddChecks, AddHistories and AddOps let other modes report their work.
func (t *Tally) AddChecks(n int64)    { t.mu.Lock(); t.checks += n; t.mu.Unlock() }
func (t *Tally) AddHistories(n int64) { t.mu.Lock(); t.histories += n; t.mu.Unlock() }
func (t *Tally) AddOps(n int64)       { t.mu.Lock(); t.ops += n; t.mu.Unlock() }
func (t *Tally) AddCounts(c Counts)   { t.mu.Lock(); t.counts.Add(c); t.mu.Unlock() }

func (t *Tally) shrinkRun()      { t.mu.Lock(); t.shrinkRuns++; t.mu.Unlock() }
func (t *Tally) setShrink(d int) { t.mu.Lock(); t.shrinking += d; t.mu.Unlock() }

// searchResult is one rapid search: rapid.Check over the Prop state machine, as
// props_test.go's TestPropQueue runs it.
type searchResult struct {
	Failed       bool
	Output       string        // everything rapid reported; the shrunk program is in it
	Checks       int           // property runs until the failure (all of them when it passed)
	FirstFailure time.Duration // from the search's start to the first failing run
	Elapsed      time.Duration
	FailFile     string // the fail file rapid wrote, relative to the working directory
	Seed         uint64 // the failing run's seed, as rapid printed it
}

// Verdict is the failure's first line, "property N (name): ...", or failing that the first line
// rapid reported.
func (r searchResult) Verdict() string {
	lines := strings.Split(r.Output, "\n")
	for _, l := range lines {
		if i := strings.Index(l, "property "); i >= 0 && verdictRE.MatchString(l[i:]) {
			return strings.TrimSpace(l[i:])
		}
	}
	for _, l := range lines {
		if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "[rapid] trying") {
			return s
		}
	}
	return "failed"
}

// rapidSeed serialises the setting of rapid's global seed flag: it is set just before a search
// starts and released once rapid has read it (when the property first runs), so concurrent
// workers each search from the seed they chose without racing on the flag.
var rapidSeed sync.Mutex

// setRapid sets one of rapid's flags. Only the seed may change while searches run (under
// rapidSeed); the others are set while none does.
func setRapid(name, value string) {
	f := flag.Lookup(name)
	if f == nil {
		panic("rapid flag " + name + " is not registered")
	}
	if err := f.Value.Set(value); err != nil {
		panic(err)
	}
}

// search runs rapid on env's queue under the test name name, starting from seed, counting what
// the programs do into tally. The property is exactly TestPropQueue's (reset, then the state
// machine without real-time leases); the actions are wrapped only to observe the trace, which
// draws nothing, so the fail files rapid writes replay under `go test`.
func search(ctx context.Context, env *program.Env, name string, seed uint64, tally *Tally) searchResult {
	return searchProperty(name, seed, tally, func(t *rapid.T, failed func() bool) {
		program.Begin(ctx, t, env)
		actions := program.StateMachine(ctx, env, false)
		for key, action := range actions {
			if key == "" {
				continue
			}
			actions[key] = func(t *rapid.T) {
				n := len(env.Trace)
				env.Counts = program.Counts{}
				defer func() {
					if !failed() && len(env.Trace) > n {
						tally.Observe(len(env.Trace)-n, env.Counts)
					}
				}()
				action(t)
			}
		}
		t.Repeat(actions)
	})
}

// searchProperty runs rapid on prop under the test name name from seed, counting checks and
// shrink runs into tally. prop is told whether a failure has been seen (its runs from then on
// are shrinking).
func searchProperty(name string, seed uint64, tally *Tally, prop func(t *rapid.T, failed func() bool)) searchResult {
	var (
		res      searchResult
		start    = time.Now()
		failed   bool
		released sync.Once
	)
	rapidSeed.Lock()
	setRapid("rapid.seed", strconv.FormatUint(seed, 10))
	release := func() { released.Do(rapidSeed.Unlock) }

	out, fail := program.CheckOutside(name, func(t *rapid.T) {
		release()
		passed := false
		defer func() {
			switch {
			case failed:
				tally.shrinkRun()
			case passed:
				res.Checks++
				tally.AddChecks(1)
			default:
				failed = true
				res.Checks++
				res.FirstFailure = time.Since(start)
				tally.AddChecks(1)
				tally.setShrink(+1)
			}
		}()
		prop(t, func() bool { return failed })
		passed = true
	})
	release()
	if failed {
		tally.setShrink(-1)
	}
	res.Elapsed = time.Since(start)
	res.Failed = fail
	res.Output = out
	if res.Failed {
		if m := failFileRE.FindStringSubmatch(res.Output); m != nil {
			res.FailFile, _ = strconv.Unquote(`"` + m[1] + `"`)
		}
		if m := seedRE.FindStringSubmatch(res.Output); m != nil {
			res.Seed, _ = strconv.ParseUint(m[1], 10, 64)
		}
	}
	return res
}

var (
	failFileRE = regexp.MustCompile(`-rapid\.failfile="((?:[^"\\]|\\.)*)"`)
	seedRE     = regexp.MustCompile(`-rapid\.seed=(\d+)`)
)

// roundSeed derives a search's seed from the campaign's seed, the worker and the round, so a
// campaign rerun with the same seed and workers repeats each worker's rounds.
func roundSeed(campaign uint64, worker, round int) uint64 {
	x := campaign ^ uint64(worker)<<48 ^ uint64(round)*0x9E3779B97F4A7C15
	// splitmix64
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	x ^= x >> 31
	if x == 0 { // rapid reads 0 as "pick a random seed"
		x = 1
	}
	return x
}

// rapidFileName is how rapid turns a test name into a file name (persist.go's
// kindaSafeFilename, minus the Windows device names).
func rapidFileName(test string) string {
	var b strings.Builder
	for _, r := range test {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteRune('_')
		}
	}
	return b.String()
}

// subtestName is the name `go test` gives t.Run(name): spaces become underscores.
func subtestName(name string) string { return strings.ReplaceAll(name, " ", "_") }
