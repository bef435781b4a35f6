package schedule

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/program"
	_ "github.com/pgqcheck/pgqcheck/internal/program/lifecycle" // the effects' lines
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// The lock-order interleaving (lockorder's) as a scheduled program: s0's effect holds the row
// s2's locks first; s2's effect waits for it; s1's takes its first row and waits behind s2;
// s0 commits and s1's and s2's effects wait for each other.
const oppositeLocks = `# mode: scheduled
# sessions: 3
s0 enqueue 1
s0 enqueue 1
s0 enqueue 1
s0 claim
s1 claim
s2 claim
s0 begin
s0 effect of newest
s2 begin
s2 effect of newest
s1 begin
s1 effect of newest
s0 complete newest
s0 commit if completed, else rollback
`

// A scheduled run in which two effects deadlock reports it as property 9, naming both
// sessions' effect.sql statements and both jobs; where the effects lock in one order, the same
// program holds.
func TestScheduledDeadlockNamesBoth(t *testing.T) {
	p, err := program.Parse(oppositeLocks)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		variant  string
		deadlock bool
	}{{"mutants/lock-order-opposite", true}, {"lockorder/one-order", false}} {
		t.Run(filepath.Base(tc.variant), func(t *testing.T) {
			q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/"+tc.variant))
			if err != nil {
				t.Fatal(err)
			}
			f, err := ReplayProgram(context.Background(), suttest.Install(t, q), Config{Name: "lock-order", ReportDir: t.TempDir()}, p)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.deadlock {
				if f != nil {
					t.Fatalf("effects locking in one order failed:\n%s", f)
				}
				return
			}
			if f == nil || f.Property() != model.PNoErrors {
				t.Fatalf("no deadlock finding: %v", f)
			}
			for _, want := range []string{"40P01", "effect of job 2 (effect.sql)", "effect of job 3 (effect.sql)", "s1", "s2"} {
				if !strings.Contains(f.Verdict(), want) {
					t.Errorf("the finding does not name %q: %s", want, f.Verdict())
				}
			}
			t.Logf("%s", f.Verdict())
		})
	}
}
