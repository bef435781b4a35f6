package sut_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// BenchmarkReset measures emptying the queue between property runs, after a run's worth of rows
// (30 jobs), on the fast path (DELETE and setval) and on the TRUNCATE path a queue with foreign
// keys takes.
func BenchmarkReset(b *testing.B) {
	seed := sut.MustBuiltin(sut.DefaultQueue)
	fk := *seed
	fk.Schema += "\nCREATE TABLE job_notes (job bigint REFERENCES jobs(id), note text);"
	for _, c := range []struct {
		name string
		q    *sut.Queue
	}{{"delete", seed}, {"truncate", &fk}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			in := suttest.Install(b, c.q)
			s, err := in.Connect(ctx, "bench", sut.SessionOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for b.Loop() {
				b.StopTimer()
				for i := 0; i < 30; i++ {
					if _, _, err := s.Enqueue(ctx, fmt.Sprintf(`{"n":%d}`, i)); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := in.Reset(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
