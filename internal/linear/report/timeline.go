package report

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// Timeline writes porcupine's HTML timeline of a history (meant for one job's cut): clients
// renumbered densely in order of appearance, row locks held and faults shown as annotations.
func Timeline(h *history.History, path string) error {
	m := check.JobModel(h.Shape)
	ops := h.Porcupine()
	dense := map[int]int{}
	bySession := map[string]int{}
	order := make([]int, len(ops))
	for i := range ops {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ops[order[a]].Call < ops[order[b]].Call })
	for _, i := range order {
		c := ops[i].ClientId
		if _, ok := dense[c]; !ok {
			dense[c] = len(dense)
		}
		ops[i].ClientId = dense[c]
		bySession[h.Ops[i].Session] = dense[c]
	}
	var checked []porcupine.Operation
	for _, o := range ops {
		k := o.Input.(model.Input).Kind
		if k != model.OpLock && k != model.OpUnlock {
			checked = append(checked, o)
		}
	}
	parts := h.Shape.PartitionByJob(checked)
	if len(parts) == 0 {
		parts = [][]porcupine.Operation{{}}
	}
	var all []porcupine.Operation
	for _, p := range parts {
		all = append(all, p...)
	}
	m.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	_, info := porcupine.CheckOperationsVerbose(m, all, time.Minute)
	info.AddAnnotations(annotations(h, bySession))
	return porcupine.VisualizePath(m, info, path)
}

func annotations(h *history.History, bySession map[string]int) []porcupine.Annotation {
	var out []porcupine.Annotation
	held := map[string]history.Op{}
	for _, o := range h.Ops {
		switch f := model.FactsOf(o.Input, o.Output); {
		case f.Locks:
			held[o.Session] = o
		case f.Unlocks:
			if l, ok := held[o.Session]; ok {
				end := o.Return
				desc := fmt.Sprintf("%s holds job %d's row lock", o.Session, o.Input.Job)
				if end == history.Never {
					end = o.Call
					desc += " (released at an unknown time)"
				}
				out = append(out, porcupine.Annotation{Tag: "row locks", Start: l.Call, End: end, Description: desc, BackgroundColor: "#f3e0b5"})
				delete(held, o.Session)
			}
		}
	}
	for _, f := range h.Faults {
		a := porcupine.Annotation{Tag: "faults", Start: f.At, Description: f.Kind + " " + f.Target, BackgroundColor: "#f4b6b6"}
		if c, ok := bySession[f.Target]; ok {
			a.Tag, a.ClientId = "", c
		}
		out = append(out, a)
	}
	return out
}
