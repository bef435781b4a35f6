package river051

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"pgqcheck/adapters/riverq"
	"pgqcheck/campaign"
	"pgqcheck/model"
	"pgqcheck/sut"
	"pgqcheck/sut/pgserver"
)

// River's lifecycle as the adapter reaches it, shown judged by breaking the adapter: each
// mutant makes one decision of River's executor wrong, and a program must fail the property
// the decision keeps on it, and hold on River.
var lifeMutants = []struct {
	name string
	fail func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error)
	want model.Property
}{
	// The executor decides a last attempt's failure as an earlier one's: River retries the job
	// past its max attempts.
	{"retries-past-limit", func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error) {
		return q.Fail(ctx, c, id, min(gen, riverq.MaxAttempts-1), retryable, text)
	}, model.PRetries},
	// The executor reports a failure for good as a retryable one: a cancelled job comes back.
	{"cancel-retries", func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, id, gen int64, _ bool, text string) (int64, error) {
		return q.Fail(ctx, c, id, gen, true, text)
	}, model.PRetries},
}

// mutated is River with its executor's failure decision replaced.
type mutated struct {
	*riverq.Queue
	fail func(q *riverq.Queue, ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error)
}

func (m mutated) Fail(ctx context.Context, c *pgx.Conn, id, gen int64, retryable bool, text string) (int64, error) {
	return m.fail(m.Queue, ctx, c, id, gen, retryable, text)
}

func init() {
	for _, lm := range lifeMutants {
		sut.Register(sut.GoDef{Name: Name + "-" + lm.name, Declared: riverq.Promises, Broken: true,
			New: func() sut.GoQueue { return mutated{riverq.New(fetch), lm.fail} }})
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
