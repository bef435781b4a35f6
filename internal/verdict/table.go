package verdict

import (
	"fmt"
	"strings"

	"github.com/pgqcheck/pgqcheck/model"
)

// The properties each kind of run judges.
var (
	SequentialProperties = model.JudgedBy(true)
	ConcurrentProperties = model.JudgedBy(false)
)

// NotPromisedWhat names what a not-promised property's findings are, for "N ... observed".
func NotPromisedWhat(p model.Property, n int) string {
	what := "breach"
	switch p {
	case model.PFencing:
		what = "stale completion"
	case model.PWriteFencing:
		what = "stale failure"
	case model.PExternal:
		what = "duplicate effect"
	}
	if n != 1 {
		what += "s"
	}
	return what
}

// Verdicts is a verdict's closing table: each property a run judged, and whether it held, was
// violated, was not promised (with how often the run saw the queue break it) or is not judged
// on this queue's shape.
type Table struct {
	Shape       model.Shape
	Judged      []model.Property
	Violated    map[model.Property]bool
	NotPromised map[model.Property]int
}

// NewTable starts a table for the properties a suite judges.
func NewTable(sh model.Shape, judged ...model.Property) *Table {
	return &Table{Shape: sh, Judged: judged, Violated: map[model.Property]bool{}, NotPromised: map[model.Property]int{}}
}

// Status is one property's line: held, violated, not promised (N observed), not judged.
func (v *Table) Status(p model.Property) string {
	switch {
	case !v.Shape.Judged(p):
		return "not judged (" + v.Shape.NotJudged(p) + ")"
	case v.Violated[p]:
		return "violated"
	case !v.Shape.Promised(p):
		return fmt.Sprintf("not promised: %d observed", v.NotPromised[p])
	}
	return "held"
}

func (v *Table) String() string {
	var b strings.Builder
	b.WriteString("property                    verdict\n")
	for _, p := range v.Judged {
		fmt.Fprintf(&b, "%-3d %-23s %s\n", int(p), p.Name(), v.Status(p))
	}
	return b.String()
}
