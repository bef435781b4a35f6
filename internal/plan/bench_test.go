package plan

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
)

// BenchmarkClaimCost measures one claim per iteration, under EXPLAIN ANALYZE in a rolled-back
// transaction, for every queue under judgement at 10k, 100k and (without -short) 1M done rows
// plus DefaultActive. buffers/claim is the figure to compare; ms/claim is the server's
// execution time, ns/op adds the round trips and the EXPLAIN output.
//
//	go test -run '^$' -bench ClaimCost ./internal/plan/
func BenchmarkClaimCost(b *testing.B) {
	ctx := context.Background()
	sizes := []int{10_000, 100_000, 1_000_000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	for _, q := range suttest.Queues(b) {
		b.Run(q.Name, func(b *testing.B) {
			in := suttest.Install(b, q)
			lab, err := Open(ctx, in)
			var nm *NotMeasurableError
			if errors.As(err, &nm) {
				b.Skip(nm.Error())
			}
			if err != nil {
				b.Fatal(err)
			}
			defer lab.Close()
			for _, n := range sizes {
				b.Run(strconv.Itoa(n), func(b *testing.B) {
					st := DefaultActive
					st.DoneRows = n
					if err := lab.Fill(ctx, st); err != nil {
						b.Fatal(err)
					}
					if _, err := lab.Explain(ctx); err != nil { // warm-up
						b.Fatal(err)
					}
					var buffers int64
					var ms float64
					claims := 0
					for b.Loop() {
						c, err := lab.Explain(ctx)
						if err != nil {
							b.Fatal(err)
						}
						buffers += c.Buffers
						ms += c.ExecMs
						claims++
					}
					b.ReportMetric(float64(buffers)/float64(claims), "buffers/claim")
					b.ReportMetric(ms/float64(claims), "ms/claim")
				})
			}
		})
	}
}
