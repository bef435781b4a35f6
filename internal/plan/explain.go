package plan

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Claim is one claim under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON), boiled down.
type Claim struct {
	Buffers      int64   // shared hit + read of the whole statement (its top node)
	SharedHit    int64   // blocks found in shared buffers
	SharedRead   int64   // blocks read from outside them
	ExecMs       float64 // Execution Time
	PlanningMs   float64 // Planning Time
	Rows         int64   // rows the statement returned
	RowsFiltered int64   // rows read and thrown away by filters, over every executed node
	Shape        string  // the plan's nodes on one line, see shapeOf
	Indexes      []string
	Raw          json.RawMessage // the server's output, for whoever wants the detail
}

// node is the part of an EXPLAIN JSON plan node read here. Counts are floats: newer servers
// print fractional averages.
type node struct {
	NodeType  string  `json:"Node Type"`
	Operation string  `json:"Operation"`
	Relation  string  `json:"Relation Name"`
	Alias     string  `json:"Alias"`
	Index     string  `json:"Index Name"`
	CTE       string  `json:"CTE Name"`
	Subplan   string  `json:"Subplan Name"`
	Loops     float64 `json:"Actual Loops"`
	Rows      float64 `json:"Actual Rows"`
	Filtered  float64 `json:"Rows Removed by Filter"`
	Rechecked float64 `json:"Rows Removed by Index Recheck"`
	JoinFilt  float64 `json:"Rows Removed by Join Filter"`
	Hit       int64   `json:"Shared Hit Blocks"`
	Read      int64   `json:"Shared Read Blocks"`
	Plans     []node  `json:"Plans"`
}

type explained struct {
	Plan          node    `json:"Plan"`
	PlanningTime  float64 `json:"Planning Time"`
	ExecutionTime float64 `json:"Execution Time"`
}

// ParseExplain reads the output of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON).
func ParseExplain(out []byte) (*Claim, error) {
	var all []explained
	if err := json.Unmarshal(out, &all); err != nil {
		return nil, fmt.Errorf("pgqcheck: plan: reading EXPLAIN output: %v", err)
	}
	if len(all) != 1 {
		return nil, fmt.Errorf("pgqcheck: plan: EXPLAIN gave %d plans, want 1", len(all))
	}
	e := all[0]
	top := e.Plan
	c := &Claim{
		SharedHit:  top.Hit,
		SharedRead: top.Read,
		Buffers:    top.Hit + top.Read,
		ExecMs:     e.ExecutionTime,
		PlanningMs: e.PlanningTime,
		Rows:       int64(top.Rows*top.Loops + 0.5),
		Shape:      shapeOf(&top),
		Raw:        json.RawMessage(out),
	}
	seen := map[string]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		if n.Loops == 0 {
			return
		}
		// EXPLAIN prints per-loop averages; the totals are what the claim paid.
		c.RowsFiltered += int64((n.Filtered+n.Rechecked+n.JoinFilt)*n.Loops + 0.5)
		if n.Index != "" && !seen[n.Index] {
			seen[n.Index] = true
			c.Indexes = append(c.Indexes, n.Index)
		}
		for i := range n.Plans {
			walk(&n.Plans[i])
		}
	}
	walk(&top)
	sort.Strings(c.Indexes)
	return c, nil
}

// shapeOf renders a plan on one line: a node and its only child joined by " > ", several
// children in [ | ], a CTE or InitPlan prefixed with its name, and "(not run)" where the
// executor never started a branch (the expired path of a split claim when a ready job was
// found, for one). Counts are left out, so that the same plan reads the same at every size.
func shapeOf(n *node) string {
	var b strings.Builder
	shape(&b, n, true)
	return b.String()
}

func shape(b *strings.Builder, n *node, run bool) {
	if n.Subplan != "" {
		name, _, _ := strings.Cut(n.Subplan, " (") // "InitPlan 1 (returns $2)"
		b.WriteString(name + ": ")
	}
	b.WriteString(label(n))
	if run && n.Loops == 0 {
		b.WriteString(" (not run)")
		run = false
	}
	switch len(n.Plans) {
	case 0:
	case 1:
		b.WriteString(" > ")
		shape(b, &n.Plans[0], run)
	default:
		b.WriteString(" > [")
		for i := range n.Plans {
			if i > 0 {
				b.WriteString(" | ")
			}
			shape(b, &n.Plans[i], run)
		}
		b.WriteString("]")
	}
}

func label(n *node) string {
	switch {
	case n.NodeType == "ModifyTable":
		return n.Operation + " " + n.Relation
	case n.Index != "":
		return n.NodeType + " " + n.Index
	case n.CTE != "":
		return n.NodeType + " " + n.CTE
	case n.Relation != "":
		return n.NodeType + " " + n.Relation
	case n.Alias != "":
		return n.NodeType + " " + n.Alias
	}
	return n.NodeType
}
