package gue

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/vgarvardt/gue/v5"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// gue's lifecycle as the adapter reaches it, shown judged by breaking the adapter: each
// mutant makes one of gue's decisions wrong, and a program must fail the property the decision
// keeps on it, and hold on gue.
var lifeMutants = []struct {
	name  string
	queue func() sut.GoQueue
	want  model.Property
}{
	// The client's backoff is none: a failed job is due again at once.
	{"backoff-ignored", func() sut.GoQueue { return &Queue{backoff: gue.NewConstantBackoff(0)} }, model.PScheduling},
	// A failure for good is reported as a retryable one: the discarded job comes back.
	{"discard-retried", func() sut.GoQueue { return discardRetried{&Queue{}} }, model.PRetries},
}

type discardRetried struct{ *Queue }

func (d discardRetried) Fail(ctx context.Context, c *pgx.Conn, id, gen int64, _ bool, text string) (int64, error) {
	return d.Queue.Fail(ctx, c, id, gen, true, text)
}

func init() {
	for _, lm := range lifeMutants {
		sut.Register(sut.GoDef{Name: Name + "-" + lm.name, Declared: Promises, Broken: true, New: lm.queue})
	}
}

// TestLifecycleMutantsCaught: each mutant's program (testdata/lifecycle) breaks the property
// it names on the mutant and holds on gue itself.
func TestLifecycleMutantsCaught(t *testing.T) {
	srv := func() (*pgserver.Server, error) { return pgserver.Shared(context.Background()) }
	for _, lm := range lifeMutants {
		t.Run(lm.name, func(t *testing.T) {
			file := filepath.Join("testdata", "lifecycle", lm.name+".ops")
			for _, name := range []string{Name + "-" + lm.name, Name} {
				q, _ := sut.Registered(name)
				// A catch that needs the next claim before the backoff ends (200 ms) misses when a
				// loaded machine takes longer between the steps: the mutant's program is replayed
				// up to five times, and each miss is logged.
				var r *campaign.Replayed
				for try := 1; ; try++ {
					var err error
					if r, err = campaign.ReplayFile(context.Background(), srv, q, file); err != nil {
						t.Fatal(err)
					}
					if name == Name || r.Finding != nil || try == 5 {
						break
					}
					t.Logf("%s on %s, try %d: held:\n%s", file, name, try, r.Trace)
				}
				switch {
				case name == Name && !r.Held():
					t.Errorf("%s breaks gue itself:\n%s", file, r.Trace)
				case name != Name && (r.Finding == nil || r.Finding.Property() != lm.want):
					t.Errorf("%s on %s: want %s, got %v\n%s", file, name, lm.want, r.Finding, r.Trace)
				case name != Name:
					t.Logf("%s: %s", name, r.Finding.Violation)
				}
			}
		})
	}
}
