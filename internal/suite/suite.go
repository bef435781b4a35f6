// Package suite is the Prop and Linear suites as functions of a test and a queue: the tests at
// the root of this module run them on every queue under judgement, and pgqcheck.Judge runs them
// on a user's queue from the user's own test. Each reads scenario, run, check, report: install
// the queue in a database of its own, search one mode (internal/hunt, the one search every
// caller shares), judge what it found, and save a failure's program where the next go test
// replays it.
package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/internal/hunt"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Config is what every suite of one judgement shares.
type Config struct {
	// Install gives a test a database of its own with the queue installed, dropped when the
	// test ends.
	Install func(testing.TB, *sut.Queue) *sut.Installed
	// Corpus is the folder a failure's program is saved into, and whose programs Programs
	// replays: the regression corpus.
	Corpus string
	// Replay is the command that replays Corpus, for the line that says where a failure went.
	Replay string
	// Checks is the number of rapid checks of a sequential or scheduled search; 0 takes
	// -rapid.checks (rapid's default, 100). A real-time search runs a fifth of them.
	Checks int
	// Seed is rapid's first seed; 0 takes -rapid.seed (0 there: a random one per search).
	Seed uint64
	// ShrinkTime is what rapid may spend shrinking a failure; 0 takes -rapid.shrinktime.
	ShrinkTime time.Duration
	// Reduce bounds the reduction of a failure's program after rapid's shrinking.
	Reduce time.Duration
	// StressFor is how long a stress run's traffic runs.
	StressFor time.Duration
	// Board collects what the suites found, for the verdict printed once they have all run;
	// nil keeps nothing.
	Board *Board
	// BriefStress leaves a stress failure's operations in its report folder: judging one
	// queue, the output leads with the reduced programs of the other modes.
	BriefStress bool
}

// Defaults are the settings of `go test` at this module's root.
const (
	DefaultReduce    = 20 * time.Second
	DefaultStressFor = 2 * time.Second
)

func (c Config) checks(divide int) int {
	n := c.Checks
	if n == 0 {
		n = hunt.FlagSettings().Checks
	}
	return max(1, n/divide)
}

func (c Config) settings(round int, divide int) hunt.Settings {
	flags := hunt.FlagSettings()
	seed := c.Seed
	if seed == 0 {
		seed = flags.Seed
	}
	if seed != 0 {
		seed += uint64(round) << 20 // each round its own seeds, none shared with the last
	}
	shrink := c.ShrinkTime
	if shrink == 0 {
		shrink = flags.ShrinkTime
	}
	return hunt.Settings{Seed: seed, Checks: c.checks(divide), ShrinkTime: shrink}
}

func (c Config) reduce() time.Duration {
	if c.Reduce == 0 {
		return DefaultReduce
	}
	return c.Reduce
}

func (c Config) stressFor() time.Duration {
	if c.StressFor == 0 {
		return DefaultStressFor
	}
	return c.StressFor
}

// saveFirst keeps a failing run's program as soon as it is found, before shrinking, and
// returns where: the case survives whatever happens to the rest of the test.
func (c Config) saveFirst(t *testing.T, q *sut.Queue, f *verdict.Finding) string {
	if c.Corpus == "" || f.Program == nil {
		return ""
	}
	path, _, err := corpus.SaveIn(c.Corpus, kept(q, f), t.Name())
	if err != nil {
		return ""
	}
	return path
}

// fail fails the test with a finding, its reduced program first, and saves the program in the
// corpus, where every later go test replays it. A failure already saved adds nothing. rest
// names where the rest of the failure is kept. It returns the file that holds the program.
func (c Config) fail(t *testing.T, q *sut.Queue, f *verdict.Finding, rest string) string {
	t.Helper()
	if c.Corpus == "" || f.Program == nil {
		t.Errorf("%s%s", f, rest)
		return ""
	}
	path, fresh, err := corpus.SaveIn(c.Corpus, kept(q, f), t.Name())
	if err != nil {
		t.Errorf("%s(the program could not be saved: %v)%s", f, err, rest)
		return ""
	}
	verb := "saved as"
	if !fresh {
		verb = "already saved as"
	}
	t.Errorf("%s%s %s (replays with %s)%s", f, verb, path, c.Replay, rest)
	return path
}

// found is a search's finding judged: the test fails with it, its program replaces the one
// saved before shrinking, and the board has it.
func (c Config) found(t *testing.T, q *sut.Queue, f *verdict.Finding, first string, st hunt.Stats) {
	t.Helper()
	rest := ""
	if log := keepLog(t, st.Output); log != "" {
		rest = "; rapid's draws: " + log
	}
	if f.ReportDir != "" && !strings.Contains(f.String(), f.ReportDir) {
		rest += "; the reduced run's report: " + f.ReportDir
	}
	saved := c.fail(t, q, f, rest)
	if saved != first && first != "" {
		_ = os.Remove(first) // the reduced program replaces it
	}
	c.Board.Found(t.Name(), q, f, saved)
}

// kept is f as its case is saved: the queue named by its folder relative to the test's
// package folder where it lies inside, so that the case reads the same in every checkout.
func kept(q *sut.Queue, f *verdict.Finding) *verdict.Finding {
	g := *f
	g.Source = q.Ref(".")
	return &g
}

// keepLog writes what rapid reported to a file of the test's own report folder and returns
// its path; "" when there is nothing to keep or the run is being interrupted.
func keepLog(t *testing.T, out string) string {
	if out == "" || pgserver.Interrupted() {
		return ""
	}
	dir := filepath.Join(os.TempDir(), "pgqcheck-"+program.SafeName(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ""
	}
	path := filepath.Join(dir, "rapid.log")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return ""
	}
	return path
}

func indent(s string) string  { return indentBy(s, "  ") }
func lines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

func indentBy(s, by string) string {
	var b strings.Builder
	for _, l := range lines(s) {
		b.WriteString(by + l + "\n")
	}
	return b.String()
}

// firstLines is text cut to its first n lines, saying how many it left out.
func firstLines(text string, n int) string {
	ls := lines(text)
	if len(ls) <= n {
		return strings.Join(ls, "\n") + "\n"
	}
	return strings.Join(ls[:n], "\n") + fmt.Sprintf("\n... (%d more lines in the report)\n", len(ls)-n)
}
