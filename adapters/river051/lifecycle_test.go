package river051

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/adapters/riverq"
	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// River's lifecycle as the adapter reaches it, shown judged by breaking the adapter: each
// mutant makes one decision of River's wrong (its executor's on a failure, its insert's on a
// job scheduled for later), and a program must fail the property the decision keeps on it,
// and hold on River.
var lifeMutants = []struct {
	name      string
	fail      func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error)
	enqueueAt func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, payload string, delay time.Duration) (int64, error)
	want      model.Property
}{
	// The executor decides a last attempt's failure as an earlier one's: River retries the job
	// past its max attempts.
	{name: "retries-past-limit", fail: func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error) {
		return q.Fail(ctx, c, id, min(gen, riverq.MaxAttempts-1), retryable, text)
	}, want: model.PRetries},
	// The executor reports a failure for good as a retryable one: a cancelled job comes back.
	{name: "cancel-retries", fail: func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, id, gen int64, _ bool, text string) (int64, error) {
		return q.Fail(ctx, c, id, gen, true, text)
	}, want: model.PRetries},
	// The insert drops InsertOpts.ScheduledAt: a job scheduled for later is available at once.
	{name: "schedule-dropped", enqueueAt: func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, payload string, _ time.Duration) (int64, error) {
		return q.Enqueue(ctx, c, payload)
	}, want: model.PScheduling},
}

// mutated is River with one of its decisions replaced.
type mutated struct {
	*riverq.Queue
	fail      func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error)
	enqueueAt func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, payload string, delay time.Duration) (int64, error)
}

func (m mutated) Fail(ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error) {
	if m.fail == nil {
		return m.Queue.Fail(ctx, c, id, gen, retryable, text)
	}
	return m.fail(m.Queue, ctx, c, id, gen, retryable, text)
}

func (m mutated) EnqueueAt(ctx context.Context, c *pgx.Conn, payload string, delay time.Duration) (int64, error) {
	if m.enqueueAt == nil {
		return m.Queue.EnqueueAt(ctx, c, payload, delay)
	}
	return m.enqueueAt(m.Queue, ctx, c, payload, delay)
}

func init() {
	for _, lm := range lifeMutants {
		sut.Register(sut.GoDef{Name: Name + "-" + lm.name, Declared: riverq.Promises, Broken: true,
			New: func() sut.GoQueue { return mutated{riverq.New(fetch), lm.fail, lm.enqueueAt} }})
	}
}

// TestLifecycleMutantsCaught: each mutant's program (testdata/lifecycle) breaks the property
// it names on the mutant and holds on River itself.
func TestLifecycleMutantsCaught(t *testing.T) {
	srv := func() (*pgserver.Server, error) { return pgserver.Shared(context.Background()) }
	for _, lm := range lifeMutants {
		t.Run(lm.name, func(t *testing.T) {
			file := filepath.Join("testdata", "lifecycle", lm.name+".ops")
			for _, name := range []string{Name + "-" + lm.name, Name} {
				q, _ := sut.Registered(name)
				r, err := campaign.ReplayFile(context.Background(), srv, q, file)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case name == Name && !r.Held():
					t.Errorf("%s breaks River itself:\n%s", file, r.Trace)
				case name != Name && (r.Finding == nil || r.Finding.Property() != lm.want):
					t.Errorf("%s on %s: want %s, got %v\n%s", file, name, lm.want, r.Finding, r.Trace)
				case name != Name:
					t.Logf("%s: %s", name, r.Finding.Violation)
				}
			}
		})
	}
}
