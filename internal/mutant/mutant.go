// Package mutant reads the deliberately broken queues that prove the properties can fail:
// each a queue folder plus mutant.json naming its bug and the suites required to catch it.
package mutant

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/pgqcheck/pgqcheck/sut"
)

// Mutant is one broken queue.
type Mutant struct {
	Name   string
	Dir    string
	Bug    string   // one line: what is broken
	Expect []string // the suites that must catch it: "Prop", "Linear"
	// GoQueue names the registered Go queue that is the mutant (sut.Register), for a mutant
	// written in Go; its folder then holds mutant.json alone.
	GoQueue string `json:"queue,omitempty"`
	Queue   *sut.Queue
}

// Expects reports whether suite must catch this mutant.
func (m *Mutant) Expects(suite string) bool {
	for _, s := range m.Expect {
		if s == suite {
			return true
		}
	}
	return false
}

// Replays is how many times a saved catch of m (a program, a fuzz input) is replayed before it
// counts as no longer catching: once, or ten times for a mutant only real time shows
// (PropLeaseTime), whose catch hangs on a statement landing inside a window of 20 ms or more
// at a lease's edge. On two cores at a load of 8, pauses to such a window landed the next
// statement 10 to 35 ms late, outside it in about a third of the replays; ten replays make a
// miss of every one rare where five did not.
func (m *Mutant) Replays() int {
	if m.Expects("PropLeaseTime") {
		return 10
	}
	return 1
}

// Retry replays a saved catch of m until caught says it caught m (or that replaying is over),
// at most Replays() times, and reports whether it did.
func (m *Mutant) Retry(caught func() bool) bool {
	for i := 0; i < m.Replays(); i++ {
		if caught() {
			return true
		}
	}
	return false
}

// Load reads every mutant folder under dir, sorted by name.
func Load(dir string) ([]*Mutant, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: mutants folder %s: %v", dir, err)
	}
	var out []*Mutant
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(filepath.Join(path, "mutant.json"))
		if err != nil {
			return nil, fmt.Errorf("pgqcheck: mutant %s: %v; each mutant folder needs mutant.json {\"bug\": ..., \"expect\": [\"Prop\"|\"Linear\"]}", path, err)
		}
		m := &Mutant{Name: e.Name(), Dir: path}
		if err := json.Unmarshal(b, m); err != nil || m.Bug == "" || len(m.Expect) == 0 {
			return nil, fmt.Errorf("pgqcheck: mutant %s: mutant.json must hold {\"bug\": \"...\", \"expect\": [\"Prop\"|\"Linear\"]} (%v)", path, err)
		}
		if m.GoQueue != "" {
			q, ok := sut.Registered(m.GoQueue)
			if !ok {
				return nil, fmt.Errorf("pgqcheck: mutant %s names the Go queue %q, which this binary does not register; import the package that registers it (github.com/pgqcheck/pgqcheck/internal/goqueues)", path, m.GoQueue)
			}
			m.Queue = q
		} else if m.Queue, err = sut.LoadDir(path); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
