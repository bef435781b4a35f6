package pgqcheck_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestWaitRuleSameInEveryMode: a statement that takes jobs (a claim, a rescue) must skip the
// rows other sessions hold locked. A rescue that waits for a locked row instead breaks property
// 5 in a sequential program and in a scheduled one alike, and the scheduled finding names the
// session that holds the lock.
func TestWaitRuleSameInEveryMode(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("testdata", "queues", "rescued")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == sut.FileRescue {
			b = []byte(strings.Replace(string(b), "FOR UPDATE SKIP LOCKED", "FOR UPDATE", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q, err := sut.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ mode, text, names string }{
		{"sequential", "enqueue 1\nw0 claim\nexpire job 1\nlocker0 lock job 1\nw1 rescue\n", "rescue waited"},
		{"scheduled", "# mode: scheduled\n# sessions: 3\ns0 enqueue 1\ns0 claim\ns0 expire job 1\ns1 begin\ns1 lock job 1\ns2 rescue\n", "held by s1 (backend"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			p, err := program.Parse(c.text)
			if err != nil {
				t.Fatal(err)
			}
			r := &corpus.Replayer{In: suttest.Install(t, q), ReportDir: t.TempDir()}
			defer r.Close()
			f, err := r.Replay(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if f == nil || f.Property() != model.PSkipLocked || !strings.Contains(f.Verdict(), c.names) {
				t.Fatalf("a rescue waiting for a locked row: got %v, want property 5 naming %q\n%s", f, c.names, r.Trace())
			}
		})
	}
}
