// Package deploytest runs a deployment from a test: the adapters modules' tests judge their
// library as it is deployed with it, on the process's shared server.
package deploytest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/deploy"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// Run runs the library deployment named target once, on the shared server (so without restart
// faults: that server is not the test's to crash), and logs what it did and found. Its report
// folder is the test's to keep while it runs.
func Run(tb testing.TB, target string, cfg deploy.Config) *deploy.Result {
	tb.Helper()
	t, err := deploy.Library(target)
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := pgserver.Shared(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Server, cfg.Target, cfg.ReportDir = srv, t, tb.TempDir()
	res, err := deploy.Run(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	res.Summary(&b)
	tb.Logf("%s(%v)\n%s", b.String(), res.Took.Round(time.Millisecond), res.TableText())
	return res
}

// NotPromised reports how many findings of property p the run measured as not promised.
func NotPromised(res *deploy.Result, p int) int {
	n := 0
	for _, f := range res.Observed.NotPromised {
		if int(f.Violation.Property) == p {
			n++
		}
	}
	for _, v := range res.Verdict.NotPromised {
		if int(v.Property) == p {
			n++
		}
	}
	return n
}
