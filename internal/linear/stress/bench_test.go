package stress

import (
	"context"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// BenchmarkProxyOverhead measures what the fault proxy costs when no fault is armed: the same
// recorded workers (enqueue, claim, complete) straight to Postgres and through the proxy, in
// one run, alternating, and their ratio.
func BenchmarkProxyOverhead(b *testing.B) {
	in := suttest.Install(b, sut.MustBuiltin(sut.DefaultQueue))
	p, err := faultproxy.New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	const workers, d = 3, 2 * time.Second
	for b.Loop() {
		direct, err := ThroughputVia(context.Background(), in, workers, d, true, nil)
		if err != nil {
			b.Fatal(err)
		}
		proxied, err := ThroughputVia(context.Background(), in, workers, d, true, p)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(direct, "direct-ops/s")
		b.ReportMetric(proxied, "proxied-ops/s")
		b.ReportMetric(proxied/direct, "proxied/direct")
	}
}
