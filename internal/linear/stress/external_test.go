package stress

import (
	"context"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestStressExternalEffects: stress workers call a destination before each completion, now and
// then with a fault on the call, while chaos expires leases and reclaims follow. A destination
// that applies every call ends with duplicates, counted and not promised; a fencing one and an
// idempotent one hold exactly one effect of each done job.
func TestStressExternalEffects(t *testing.T) {
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	for _, mode := range effectdest.Modes {
		t.Run(string(mode), func(t *testing.T) {
			d, err := effectdest.Start(mode)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			res, err := Run(context.Background(), in, Config{Workers: 4, Duration: 2 * time.Second, ReportDir: t.TempDir(), Dest: d.URL(), Seed: 11})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res)
			if res.Failed() {
				t.Fatalf("%s\n%s", res, res.Verdict.Explanation)
			}
			c := res.Counts
			t.Logf("%s: %d calls (%d sent again after a lost reply), %d duplicates at the destination, %d jobs it heard of", mode, c.Calls, c.Retries, c.Duplicates, len(res.Dest.Jobs))
			if c.Calls == 0 || c.Retries == 0 {
				t.Fatal("no call of the destination, or none sent again")
			}
			if mode.Fences() != (c.Duplicates == 0) || mode.Fences() != (c.NotPromised == 0) {
				t.Errorf("%s: %d duplicates, %d not promised", mode, c.Duplicates, c.NotPromised)
			}
		})
	}
}
