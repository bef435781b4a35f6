package suite

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// A failing verdict is read from the top: each failing test prints its broken property, its
// reduced program and one line naming where the rest is kept; once every suite has run, the
// board prints each queue's table of properties and the smallest program found across its
// modes.

// Board collects what the suites found, queue by queue. A nil Board keeps nothing.
type Board struct {
	mu     sync.Mutex
	queues map[string]*queueVerdict
}

type queueVerdict struct {
	shape       model.Shape
	violated    map[model.Property][]string // the tests that broke each property
	notPromised map[model.Property]int
	judged      map[model.Property]bool
	smallest    *verdict.Finding // the finding with the fewest operations
	saved       string           // where its program is kept
}

// NewBoard is an empty board.
func NewBoard() *Board { return &Board{queues: map[string]*queueVerdict{}} }

func (b *Board) of(q *sut.Queue) *queueVerdict {
	v := b.queues[q.Name]
	if v == nil {
		v = &queueVerdict{shape: q.Shape(), violated: map[model.Property][]string{},
			notPromised: map[model.Property]int{}, judged: map[model.Property]bool{}}
		b.queues[q.Name] = v
	}
	return v
}

// Judged records that a suite judged these properties of q.
func (b *Board) Judged(q *sut.Queue, ps ...model.Property) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.of(q)
	for _, p := range ps {
		v.judged[p] = true
	}
}

// NotPromised records n observations of a property q does not promise.
func (b *Board) NotPromised(q *sut.Queue, p model.Property, n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.of(q).notPromised[p] += n
}

// Found records test's finding on q, and where its program is kept.
func (b *Board) Found(test string, q *sut.Queue, f *verdict.Finding, saved string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	v := b.of(q)
	p := f.Property()
	v.judged[p] = true
	if !slices.Contains(v.violated[p], test) {
		v.violated[p] = append(v.violated[p], test)
	}
	if f.Program != nil && len(f.Program.Ops) > 0 && (v.smallest == nil || len(f.Program.Ops) < len(v.smallest.Program.Ops)) {
		v.smallest, v.saved = f, saved
	}
}

// Violated records a broken property of a test that has no program to show (a stress run).
func (b *Board) Violated(test string, q *sut.Queue, p model.Property) {
	b.Found(test, q, &verdict.Finding{Violation: model.Violate(p, "%s", "")}, "")
}

// Failed reports whether any suite broke a property of any queue.
func (b *Board) Failed() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, v := range b.queues {
		if len(v.violated) > 0 {
			return true
		}
	}
	return false
}

// Print writes each queue's verdict: the table of every property judged, held, violated (by
// which tests), not promised or not judged, then the smallest program that breaks one.
func (b *Board) Print(w io.Writer) {
	if b == nil {
		return
	}
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
			if v.judged[p] {
				judged = append(judged, p)
			}
		}
		table := verdict.NewTable(v.shape, judged...)
		for p := range v.violated {
			table.Violated[p] = true
		}
		for p, k := range v.notPromised {
			table.NotPromised[p] = k
		}
		fmt.Fprintf(w, "  %-27s %s\n", "property", "verdict")
		for _, p := range judged {
			by := ""
			if tests := v.violated[p]; len(tests) > 0 {
				by = "  (" + strings.Join(tests, ", ") + ")"
			}
			fmt.Fprintf(w, "  %-3d %-23s %s%s\n", int(p), p.Name(), table.Status(p), by)
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
