package plan

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
)

// Summary is the report as a table for people.
func (r *Report) Summary() string { return Table(r) }

// Table puts several queues' reports in one table, so their claims can be compared state by
// state. Plans are long, so the table names them by letter and spells them out below it.
func Table(reports ...*Report) string {
	var b strings.Builder
	servers, repeats := map[string]bool{}, 0
	for _, r := range reports {
		if r.Server != "" {
			servers[r.Server] = true
		}
		repeats = max(repeats, r.Repeats)
	}
	var on []string
	for s := range servers {
		on = append(on, "PostgreSQL "+s)
	}
	fmt.Fprintf(&b, "claim cost per state: median of %d claims, each under EXPLAIN (ANALYZE, BUFFERS) in a rolled-back transaction", repeats)
	if len(on) > 0 {
		fmt.Fprintf(&b, "; %s", strings.Join(on, ", "))
	}
	b.WriteString("\n")

	var plans []string
	letter := map[string]string{}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queue\tstate\tdone\tready\texpired\trunning\tbuffers\texec ms\tfiltered\tclaimed\tplan\tindexes\t")
	for _, r := range reports {
		for _, row := range r.Rows {
			l, ok := letter[row.PlanShape]
			if !ok {
				l = planName(len(plans))
				letter[row.PlanShape] = l
				plans = append(plans, row.PlanShape)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t\n",
				r.Queue, row.Name, count(row.DoneRows), count(row.ReadyRows), count(row.ExpiredRows), count(row.RunningRows),
				row.Buffers, millis(row.ExecMs), count(int(row.RowsFiltered)), row.Claimed, l, strings.Join(row.UsesIndexes, ","))
		}
	}
	tw.Flush()
	if len(plans) > 0 {
		b.WriteString("plans:\n")
		for i, p := range plans {
			fmt.Fprintf(&b, "  %s  %s\n", planName(i), p)
		}
	}
	b.WriteString("verdict:\n")
	for _, r := range reports {
		fmt.Fprintf(&b, "  %s: %s\n", r.Queue, r.Verdict)
		for _, row := range r.Rows {
			if row.Note != "" {
				fmt.Fprintf(&b, "  %s, %s: %s\n", r.Queue, row.Name, row.Note)
			}
		}
	}
	return b.String()
}

func planName(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return "P" + strconv.Itoa(i+1)
}

// count writes n with thousands separators.
func count(n int) string { return textfmt.Thousands(int64(n)) }

func millis(ms float64) string {
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 3, 64)
	}
	return strconv.FormatFloat(ms, 'f', 1, 64)
}
