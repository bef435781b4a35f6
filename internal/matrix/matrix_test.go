package matrix

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestMatrixLocal runs the version matrix on this machine's own server with one mutant: the
// walkthrough holds, every built-in queue's campaign holds and measures the claim's cost, the
// mutant is caught by every mode its suites demand, and the table says so.
func TestMatrixLocal(t *testing.T) {
	suttest.SelfCheck(t, "./internal/matrix")
	t.Parallel()
	one := []*mutant.Mutant{suttest.Mutant(t, "complete-ignores-generation")}
	var log bytes.Buffer
	rows := Run(context.Background(), Config{Servers: []string{"local"}, Duration: 2 * time.Second, Seed: 1,
		Mutants: one, Budget: 30 * time.Second, DoneRows: 1000, Log: &log})
	if len(rows) != 1 {
		t.Fatalf("%d rows\n%s", len(rows), log.String())
	}
	r := rows[0]
	if bad := Problems(rows); len(bad) > 0 || r.Rows != 4 || len(r.Verdicts) != len(sut.Builtins()) {
		t.Fatalf("%+v: %v\n%s", r, bad, log.String())
	}
	for i, c := range r.ClaimCost {
		if !strings.Contains(c, " ms") {
			t.Errorf("%s: claim cost %q", sut.Builtins()[i], c)
		}
	}
	var table strings.Builder
	Print(&table, rows, 1000)
	for _, want := range []string{"| server | walkthrough |", "PostgreSQL " + textfmt.FirstWord(r.Version) + " (local) | held | held", "4 of 4"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}
