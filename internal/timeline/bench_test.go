package timeline

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

// synthetic is a run of n operations: sessions that enqueue, claim and complete in turn, one
// in ten completions refused, an expiry every 50 jobs and a cancel every 200 operations.
func synthetic(n int) *Run {
	r := &Run{Title: "synthetic", Clock: "ns"}
	t := int64(0)
	add := func(s string, in model.Input, out model.Output) {
		r.Ops = append(r.Ops, Op{Session: s, Input: in, Output: out, Call: t, Return: t + 300_000})
		t += 100_000
	}
	for job := int64(1); len(r.Ops) < n; job++ {
		s := fmt.Sprintf("w%d", job%3)
		add("enqueuer", model.Input{Kind: model.OpEnqueue}, model.Output{Job: job})
		add(s, model.Input{Kind: model.OpClaim, Lease: time.Hour}, model.Output{Found: true, Job: job, Gen: 1})
		if job%50 == 0 {
			add("chaos", model.Input{Kind: model.OpExpire, Job: job}, model.Output{})
		}
		add(s, model.Input{Kind: model.OpComplete, Job: job, Gen: 1}, model.Output{Rows: int64(min(1, job%10))})
		if len(r.Ops)%200 < 3 {
			r.Faults = append(r.Faults, Fault{At: t - 50_000, Kind: "cancel", Target: s})
		}
	}
	return r
}

// BenchmarkMeasuresPage: computing the measures and writing the page, by run length. The
// page's size is reported too (it grows with the faults, not with the operations).
func BenchmarkMeasuresPage(b *testing.B) {
	for _, n := range []int{10_000, 200_000} {
		r := synthetic(n)
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			var size int
			for b.Loop() {
				m := Compute(r, 0)
				var w countWriter
				if err := Write(&w, r, m); err != nil {
					b.Fatal(err)
				}
				size = w.n
			}
			b.ReportMetric(float64(size)/1024, "KB/page")
			b.ReportMetric(float64(len(r.Faults)), "faults")
		})
	}
}

type countWriter struct{ n int }

func (w *countWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
