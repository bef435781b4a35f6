package linear

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"pgqcheck/timeline"
)

// Files a report folder holds for every run, passing or failing: the run's shape.
const (
	ReportMeasures     = "measures.html" // throughput, latency, fault windows and the seed's measures over time
	ReportMeasuresJSON = "measures.json" // the same measures as values
)

// TimelineRun is the history as package timeline draws it.
func (h *History) TimelineRun() *timeline.Run {
	r := &timeline.Run{Title: h.title(), Clock: h.Clock, Ops: make([]timeline.Op, len(h.Ops)), Faults: make([]timeline.Fault, len(h.Faults))}
	for i, o := range h.Ops {
		r.Ops[i] = timeline.Op{Session: o.Session, Input: o.Input, Output: o.Output, Call: o.Call, Return: o.Return}
	}
	for i, f := range h.Faults {
		r.Faults[i] = timeline.Fault{At: f.At, Until: f.Until, Kind: f.Kind, Target: f.Target}
	}
	for _, o := range h.Ops {
		if o.Session == drainSession {
			r.Marks = append(r.Marks, timeline.Mark{At: o.Call, Label: "drain: every lease expired, every job completed"})
			break
		}
	}
	return r
}

func (h *History) title() string {
	s := h.Mode + " run of " + h.Queue
	if p := strings.TrimSpace(h.Program); p != "" && !strings.Contains(p, "\n") {
		s += ": " + p
	}
	return s
}

// Measures computes the history's operational measures.
func (h *History) Measures() *timeline.Measures {
	return timeline.Compute(h.TimelineRun(), 0)
}

// WriteMeasures writes the measures page to htmlPath and returns the measures.
func WriteMeasures(h *History, htmlPath string) (*timeline.Measures, error) {
	r := h.TimelineRun()
	m := timeline.Compute(r, 0)
	if err := timeline.WriteFile(htmlPath, r, m); err != nil {
		return nil, fmt.Errorf("writing the measures page: %w", err)
	}
	return m, nil
}

// writeMeasures writes a report folder's measures page and their JSON.
func writeMeasures(dir string, h *History) (*timeline.Measures, error) {
	m, err := WriteMeasures(h, filepath.Join(dir, ReportMeasures))
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, ReportMeasuresJSON), append(b, '\n'), 0o644)
}
