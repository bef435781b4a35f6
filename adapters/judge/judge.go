// Package judge runs the suite's campaigns on the real queues the adapters register and puts
// their verdicts in one table: the tests of each adapters module assert it, and
// scripts/real-queues.sh prints it. It depends on no queue library, so that each module pins
// its own queue versions.
package judge

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Hunt runs one campaign of mode on the named queue from seed for budget, keeping one
// counterexample per property. Cases are saved under root's testdata/, a fresh folder, so that
// no earlier case is replayed first and every find is from scratch.
func Hunt(tb testing.TB, name, mode string, seed uint64, budget time.Duration, root string) *campaign.Report {
	tb.Helper()
	q, ok := sut.Registered(name)
	if !ok {
		tb.Fatalf("no queue %q registered", name)
	}
	m, err := campaign.LookupModes(mode)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	srv, err := pgserver.Shared(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	rep, err := campaign.Run(ctx, ctx, campaign.Config{Server: srv, Queue: q, Mode: m, Workers: 1,
		Seed: seed, Duration: budget, KeepGoing: true, ShrinkTime: 20 * time.Second, Root: root, Log: io.Discard})
	if err != nil {
		tb.Fatal(err)
	}
	// A harness error is no verdict on the queue: it ends that campaign's search early, and is
	// shown.
	for _, e := range rep.HarnessErrors {
		tb.Logf("%s, %s mode, seed %d: harness error (its search stopped): %.600s", name, mode, seed, e)
	}
	return rep
}

// Row is one line of the verdict table: a property of a queue at a version, its verdict, and
// how long the suite took to find its counterexample, the median over the seeds that found one.
type Row struct {
	Queue, Version string
	Property       model.Property
	Verdict        string // held, violated, not promised
	Found, Seeds   int
	Median         time.Duration
	Program        string // the shrunk counterexample of the fastest find (or the job's history)
	Mode           string
	Case           string // the fastest find's saved case: an .ops program, a fuzz input or a history
}

// Verdicts judges the queue over seeds in each mode and returns a row per property the modes
// check: violated or not promised where some seed found a counterexample, held where none did.
func Verdicts(tb testing.TB, name, version string, modes []string, seeds []uint64, budget time.Duration) []Row {
	tb.Helper()
	type finds struct {
		times   []time.Duration
		program string
		best    time.Duration
		mode    string
		status  string
		file    string
	}
	byProp := map[model.Property]*finds{}
	var props []model.Property
	checked := map[model.Property]int{} // campaigns whose mode checks the property
	for _, mode := range modes {
		for _, seed := range seeds {
			rep := Hunt(tb, name, mode, seed, budget, tb.TempDir())
			for _, ps := range rep.Properties {
				if ps.Status == campaign.StatusNotChecked || ps.Status == campaign.StatusNotJudged {
					continue
				}
				checked[ps.Number]++
				if !slices.Contains(props, ps.Number) {
					props = append(props, ps.Number)
				}
			}
			add := func(f *campaign.Failure, status string) {
				fs := byProp[f.Property]
				if fs == nil {
					fs = &finds{status: status}
					byProp[f.Property] = fs
				}
				at := time.Duration(f.FoundAfterS * float64(time.Second))
				fs.times = append(fs.times, at)
				if len(fs.times) == 1 || at < fs.best {
					fs.program, fs.best, fs.mode, fs.file = f.Program, at, mode, caseFile(f)
					if fs.program == "" {
						fs.program = f.Trace
					}
				}
			}
			for _, f := range rep.Failures {
				status := campaign.StatusViolated
				if !rep.Queue.Shape.Promised(f.Property) {
					status = campaign.StatusNotPromised // measured: the queue declares it does not promise it
				}
				add(f, status)
			}
			for _, f := range rep.NotPromisedEach {
				add(f, campaign.StatusNotPromised)
			}
			tb.Logf("%s %s seed %d: %s (%s)", name, mode, seed, rep.Verdict, rep.StopReason)
		}
	}
	sort.Slice(props, func(i, j int) bool { return props[i] < props[j] })
	var rows []Row
	for _, p := range props {
		r := Row{Queue: name, Version: version, Property: p, Verdict: campaign.StatusHeld, Seeds: checked[p]}
		if fs := byProp[p]; fs != nil {
			r.Verdict, r.Found, r.Program, r.Mode, r.Case = fs.status, len(fs.times), fs.program, fs.mode, fs.file
			slices.Sort(fs.times)
			r.Median = fs.times[len(fs.times)/2]
		}
		rows = append(rows, r)
	}
	return rows
}

// caseFile is where a failure's case was saved.
func caseFile(f *campaign.Failure) string {
	for _, p := range []string{f.ProgramFile, f.FuzzFile, f.ReplayFile} {
		if p != "" {
			return p
		}
	}
	return ""
}

// Want is a queue's verdicts as measured, by property; a property left out must hold.
type Want map[model.Property]string

// Check fails the test where a property breaks that was measured to hold, or breaks otherwise
// than measured (violated where not promised, or the reverse). An expected finding is shown
// with its program; one this run did not reach is noted (its kept case replays it).
func Check(t *testing.T, rows []Row, want Want) {
	t.Helper()
	for _, r := range rows {
		w, ok := want[r.Property]
		if !ok {
			w = campaign.StatusHeld
		}
		switch {
		case r.Verdict == campaign.StatusHeld && w != campaign.StatusHeld:
			// A short run need not find what a longer one did: the kept counterexample, which
			// TestCounterexamples replays, is what shows it still breaks.
			t.Logf("%s: property %d (%s) not broken in this run; measured before: %s", r.Queue, r.Property, r.Property.Name(), w)
		case r.Verdict != w:
			t.Errorf("%s: property %d (%s): %s, measured before: %s\n%s", r.Queue, r.Property, r.Property.Name(), r.Verdict, w, r.Program)
		case r.Found > 0:
			t.Logf("%s: property %d (%s) %s, as measured: found by %d/%d runs, median %s\n%s", r.Queue, r.Property, r.Property.Name(), r.Verdict, r.Found, r.Seeds, r.Median, r.Program)
		}
	}
}

// Keep copies each row's counterexample into dir as <queue>-p<property><ext>, where Replay
// finds it on every go test.
func Keep(tb testing.TB, rows []Row, dir string) {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	for _, r := range rows {
		if r.Case == "" {
			continue
		}
		b, err := os.ReadFile(r.Case)
		if err != nil {
			tb.Fatal(err)
		}
		ext := filepath.Ext(r.Case)
		if ext == "" {
			ext = ".fuzz"
		}
		dst := filepath.Join(dir, fmt.Sprintf("%s-p%d%s", r.Queue, r.Property, ext))
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("kept %s", dst)
	}
}

// Replay replays every counterexample kept in dir for the named queue: each must still break
// the property its name gives.
func Replay(t *testing.T, name, dir string) {
	t.Helper()
	q, ok := sut.Registered(name)
	if !ok {
		t.Fatalf("no queue %q registered", name)
	}
	files, _ := filepath.Glob(filepath.Join(dir, name+"-p*"))
	if len(files) == 0 {
		t.Skipf("no counterexample kept for %s in %s", name, dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			var p int
			if _, err := fmt.Sscanf(strings.TrimPrefix(filepath.Base(f), name+"-p"), "%d", &p); err != nil {
				t.Fatalf("%s: no property in its name", f)
			}
			r, err := campaign.ReplayFile(context.Background(), func() (*pgserver.Server, error) {
				return pgserver.Shared(context.Background())
			}, q, f)
			if err != nil {
				t.Fatal(err)
			}
			got, shown := model.Property(0), r.Trace
			switch {
			case r.Finding != nil:
				got = r.Finding.Property()
			case r.History != nil && r.History.Violation != nil:
				got, shown = r.History.Violation.Property, r.History.Text+"\n"+r.History.Explanation
				// The failing job's timeline, for reading: where EnvHTML names a folder.
				if dir := os.Getenv(EnvHTML); dir != "" {
					html := filepath.Join(dir, strings.TrimSuffix(filepath.Base(f), ".json")+".html")
					if _, err := campaign.CheckHistory(f, html); err != nil {
						t.Errorf("writing %s: %v", html, err)
					}
				}
			}
			switch {
			case r.Held():
				t.Errorf("%s held on %s; it broke property %d when kept", f, name, p)
			case got != model.Property(p):
				t.Errorf("%s broke property %d, not %d\n%s", f, got, p, shown)
			default:
				t.Logf("%s %s still breaks property %d\n%s", r.Kind, f, p, shown)
			}
		})
	}
}

// Environment of a judging run: the suite's tests run one seed for a short budget;
// scripts/real-queues.sh asks for more, for the table, and for the counterexamples kept.
const (
	EnvSeeds  = "PGQCHECK_REALQ_SEEDS"  // seeds per mode (default 1): 1, 2, ...
	EnvBudget = "PGQCHECK_REALQ_BUDGET" // each campaign's duration (default 8s)
	EnvTable  = "PGQCHECK_REALQ_TABLE"  // a file the rows are appended to, tab-separated
	EnvKeep   = "PGQCHECK_REALQ_KEEP"   // non-empty: keep each counterexample under testdata/cases
	EnvHTML   = "PGQCHECK_REALQ_HTML"   // a folder: replayed histories write their timeline there
)

// Modes are the suite's modes a real queue is judged in.
var Modes = []string{"sequential", "stress", "scheduled"}

// CasesDir is where a module keeps its counterexamples, relative to its test's package.
const CasesDir = "testdata/cases"

// Judge judges the named queue in modes (nil: every mode) as the environment asks and checks
// its verdicts against want.
func Judge(t *testing.T, name, version string, modes []string, want Want) {
	t.Helper()
	n, budget := 1, 8*time.Second
	if s := os.Getenv(EnvSeeds); s != "" {
		if _, err := fmt.Sscanf(s, "%d", &n); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a count of seeds", EnvSeeds, s)
		}
	}
	if s := os.Getenv(EnvBudget); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvBudget, s, err)
		}
		budget = d
	}
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	if modes == nil {
		modes = Modes
	}
	rows := Verdicts(t, name, version, modes, seeds, budget)
	if path := os.Getenv(EnvTable); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			found, med := "", ""
			if r.Found > 0 {
				found, med = fmt.Sprintf("%d/%d runs, fastest in %s mode", r.Found, r.Seeds, r.Mode), r.Median.Round(10*time.Millisecond).String()
			}
			fmt.Fprintf(f, "%s\t%s\t%d %s\t%s\t%s\t%s\n", r.Queue, r.Version, r.Property, r.Property.Name(), r.Verdict, found, med)
		}
		f.Close()
	}
	if os.Getenv(EnvKeep) != "" {
		Keep(t, rows, CasesDir)
	}
	Check(t, rows, want)
}
