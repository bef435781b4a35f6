package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/timeline"
)

// Files a report folder holds for every run, passing or failing: the run's shape.
const (
	MeasuresFile     = "measures.html" // throughput, latency, fault windows and the seed's measures over time
	MeasuresJSONFile = "measures.json" // the same measures as values
)

// TimelineRun is the history as package timeline draws it.
func TimelineRun(h *history.History) *timeline.Run {
	r := &timeline.Run{Title: title(h), Clock: h.Clock, Ops: make([]timeline.Op, len(h.Ops)), Faults: make([]timeline.Fault, len(h.Faults))}
	for i, o := range h.Ops {
		r.Ops[i] = timeline.Op{Session: o.Session, Input: o.Input, Output: o.Output, Call: o.Call, Return: o.Return}
	}
	for i, f := range h.Faults {
		r.Faults[i] = timeline.Fault{At: f.At, Until: f.Until, Kind: f.Kind, Target: f.Target}
	}
	for _, o := range h.Ops {
		if o.Session == history.DrainSession {
			r.Marks = append(r.Marks, timeline.Mark{At: o.Call, Label: "drain: every lease expired, every job completed"})
			break
		}
	}
	return r
}

func title(h *history.History) string {
	s := h.Mode + " run of " + h.Queue
	if p := strings.TrimSpace(h.Program); p != "" && !strings.Contains(p, "\n") {
		s += ": " + p
	}
	return s
}

// Measures computes the history's operational measures.
func Measures(h *history.History) *timeline.Measures {
	return timeline.Compute(TimelineRun(h), 0)
}

// WriteMeasures writes the measures page to htmlPath and returns the measures.
func WriteMeasures(h *history.History, htmlPath string) (*timeline.Measures, error) {
	r := TimelineRun(h)
	m := timeline.Compute(r, 0)
	if err := timeline.WriteFile(htmlPath, r, m); err != nil {
		return nil, fmt.Errorf("writing the measures page: %w", err)
	}
	return m, nil
}

// writeMeasures writes a report folder's measures page and their JSON.
func writeMeasures(dir string, h *history.History) (*timeline.Measures, error) {
	m, err := WriteMeasures(h, filepath.Join(dir, MeasuresFile))
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, MeasuresJSONFile), append(b, '\n'), 0o644)
}
