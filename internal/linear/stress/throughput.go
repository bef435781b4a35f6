package stress

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/record"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Throughput measures what recording costs: workers each loop enqueue, claim, complete on
// their own connections for d, with every operation recorded or with the same statements run
// bare, and it returns queue statements per second.
func Throughput(ctx context.Context, in *sut.Installed, workers int, d time.Duration, recorded bool) (float64, error) {
	return ThroughputVia(ctx, in, workers, d, recorded, nil)
}

// ThroughputVia is Throughput with every worker connected through p (nil: straight to
// Postgres), no fault armed: what the fault proxy costs.
func ThroughputVia(ctx context.Context, in *sut.Installed, workers int, d time.Duration, recorded bool, p *faultproxy.Proxy) (float64, error) {
	if err := in.Reset(ctx); err != nil {
		return 0, err
	}
	var rec *history.Recorder
	if recorded {
		rec = history.NewRecorder(false)
	}
	var clients []*record.Client
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := 0; i < max(workers, 1); i++ {
		c, err := record.DialVia(ctx, in, fmt.Sprintf("w%d", i), rec, sut.SessionOptions{StatementTimeout: 30 * time.Second}, p)
		if err != nil {
			return 0, err
		}
		clients = append(clients, c)
	}
	var stop atomic.Bool
	var statements atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range clients {
		a := newActor(c, in.Queue)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				if a.one(ctx, program.Enqueue{S: c.Name, N: 1}).Err != nil {
					return
				}
				claim := a.one(ctx, program.Claim{S: c.Name})
				if claim.Err != nil {
					return
				}
				statements.Add(2)
				if claim.Out.Found {
					if a.one(ctx, program.Complete{S: c.Name}).Err != nil {
						return
					}
					statements.Add(1)
				}
			}
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	return float64(statements.Load()) / time.Since(start).Seconds(), ctx.Err()
}
