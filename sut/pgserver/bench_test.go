package pgserver

import (
	"context"
	"io"
	"os"
	"testing"
	"time"
)

// BenchmarkStartup measures each backend from Start to a server that answers, and Close: local
// always; docker when PGQCHECK_IMAGE names an image present here; dsn when PGQCHECK_DSN is set.
func BenchmarkStartup(b *testing.B) {
	backends := []Options{{Kind: "local"}}
	if img := os.Getenv(EnvImage); img != "" {
		backends = append(backends, Options{Kind: "docker", Image: img})
	}
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		backends = append(backends, Options{Kind: "dsn", DSN: dsn})
	}
	for _, o := range backends {
		b.Run(o.Kind, func(b *testing.B) {
			o.Log = io.Discard
			var closing time.Duration
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				s, err := Start(ctx, o)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				t := time.Now()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				closing += time.Since(t)
			}
			b.ReportMetric(closing.Seconds()/float64(b.N), "s-close/op")
		})
	}
}
