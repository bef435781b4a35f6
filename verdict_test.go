package pgqcheck_test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/rapidrun"
	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// A failing verdict is read from the top: each failing test prints its broken property, its
// reduced program and one line naming where the rest is kept (the unreduced programs, rapid's
// draws, the history and its timeline); once every test has run, the board prints each
// queue's table of properties and the smallest program found across its modes.

// board collects what the suites found, queue by queue.
var board = &verdicts{queues: map[string]*queueVerdict{}}

type verdicts struct {
	mu     sync.Mutex
	queues map[string]*queueVerdict
}

type queueVerdict struct {
	shape    model.Shape
	violated map[model.Property][]string // the tests that broke each property
	smallest *verdict.Finding            // the finding with the fewest operations
	saved    string                      // where its program is kept
}

// found records a failing test's finding on queue q, and where its program is kept.
func (b *verdicts) found(t *testing.T, q *sut.Queue, f *verdict.Finding, saved string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.queues[q.Name]
	if v == nil {
		v = &queueVerdict{shape: q.Shape(), violated: map[model.Property][]string{}}
		b.queues[q.Name] = v
	}
	p := f.Property()
	if !slices.Contains(v.violated[p], t.Name()) {
		v.violated[p] = append(v.violated[p], t.Name())
	}
	if f.Program != nil && len(f.Program.Ops) > 0 && (v.smallest == nil || len(f.Program.Ops) < len(v.smallest.Program.Ops)) {
		v.smallest, v.saved = f, saved
	}
}

// violated records a broken property of a test that has no program to show (a stress run).
func (b *verdicts) violated(t *testing.T, q *sut.Queue, p model.Property) {
	b.found(t, q, &verdict.Finding{Violation: model.Violate(p, "%s", "")}, "")
}

// print writes each queue's verdict: the table of every property, held or violated and by
// which tests, then the smallest program that breaks one.
func (b *verdicts) print(w io.Writer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	names := make([]string, 0, len(b.queues))
	for n := range b.queues {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := b.queues[n]
		fmt.Fprintf(w, "\nverdict on %s:\n", n)
		var judged []model.Property
		for _, p := range model.Properties {
			if slices.Contains(verdict.SequentialProperties, p) || slices.Contains(verdict.ConcurrentProperties, p) {
				judged = append(judged, p)
			}
		}
		table := verdict.NewTable(v.shape, judged...)
		for p := range v.violated {
			table.Violated[p] = true
		}
		for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n") {
			p, by := model.Property(-1), ""
			if _, err := fmt.Sscanf(line, "%d", &p); err == nil && len(v.violated[p]) > 0 {
				by = "  (" + strings.Join(v.violated[p], ", ") + ")"
			}
			fmt.Fprintf(w, "  %s%s\n", line, by)
		}
		if f := v.smallest; f != nil {
			fmt.Fprintf(w, "the smallest program found, %d operations (%s mode", len(f.Program.Ops), f.Mode)
			if v.saved != "" {
				fmt.Fprintf(w, "; saved as %s", v.saved)
			}
			fmt.Fprintf(w, "):\n%s", indent(f.String()))
		}
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}

// quietRapid runs prop as rapid.Check does, but keeps what rapid says (each failing run, its
// draws, the replays of its shrunk case) out of the test's output: on a failure it is written
// to a file of the test's report folder, whose path it returns.
func quietRapid(t *testing.T, prop func(*rapid.T)) (failed bool, logPath string) {
	t.Helper()
	out, failed := rapidrun.Check(t.Name(), prop)
	if !failed {
		return false, ""
	}
	if pgserver.Interrupted() {
		return true, "(not kept: the run was interrupted)"
	}
	dir := filepath.Join(os.TempDir(), "pgqcheck-"+program.SafeName(t.Name()))
	logPath = filepath.Join(dir, "rapid.log")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return true, fmt.Sprintf("(not kept: %v)", err)
	}
	if err := os.WriteFile(logPath, []byte(out), 0o644); err != nil {
		return true, fmt.Sprintf("(not kept: %v)", err)
	}
	return true, logPath
}

// firstLines is text cut to its first n lines, saying how many it left out.
func firstLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n") + "\n"
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... (%d more lines in the report)\n", len(lines)-n)
}
