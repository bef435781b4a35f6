package pgqcheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// The public API as a user's test calls it: these run pgqcheck.Judge in this test binary, on
// the suite's own queues, as another module would on its own.

// TestJudgeSQLDir judges the seed's folder in every mode: a correct queue passes.
func TestJudgeSQLDir(t *testing.T) {
	pgqcheck.Judge(t, pgqcheck.SQLDir("sut/queues/seed"), pgqcheck.WithCorpus(t.TempDir()), pgqcheck.WithChecks(20))
}

// TestJudgeGoQueue judges a queue written in Go, given as its constructor.
func TestJudgeGoQueue(t *testing.T) {
	d, ok := sut.Definition("txbound")
	if !ok {
		t.Fatal("no Go queue txbound registered")
	}
	pgqcheck.Judge(t, pgqcheck.GoQueue(d.Name, d.Declared, d.New), pgqcheck.WithCorpus(t.TempDir()),
		pgqcheck.WithModes(pgqcheck.Sequential, pgqcheck.Scheduled), pgqcheck.WithChecks(20))
}

// TestJudgeBadInput: a queue or an option that cannot be judged is one line naming the fix.
func TestJudgeBadInput(t *testing.T) {
	for name, err := range map[string]error{
		"missing folder": pgqcheck.SQLDir(filepath.Join(t.TempDir(), "nothing")).Err(),
		"no constructor": pgqcheck.GoQueue("mine", sut.Declared{}, nil).Err(),
	} {
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "pgqcheck: ") {
			t.Errorf("%s: %v; want one line starting pgqcheck:", name, err)
		}
	}
}

// envJudgeAsUser, set, makes TestJudgeKeepsItsCases a user's test in a test binary of its
// own: it judges the queue folder before the comma, keeping its corpus in the folder after it.
const envJudgeAsUser = "PGQCHECK_JUDGE_AS_USER"

// TestJudgeKeepsItsCases is the regression corpus as a user sees it: a broken queue fails
// with the shrunk program, saved into the corpus folder the user named; the next run fails
// again from that case alone (before any search); the fixed queue passes it.
func TestJudgeKeepsItsCases(t *testing.T) {
	if dirs, ok := os.LookupEnv(envJudgeAsUser); ok {
		queue, corpusDir, _ := strings.Cut(dirs, ",")
		pgqcheck.Judge(t, pgqcheck.SQLDir(queue), pgqcheck.WithModes(pgqcheck.Sequential), pgqcheck.WithCorpus(corpusDir))
		return
	}
	suttest.SelfCheck(t, ".")
	corpusDir := t.TempDir()
	broken := suttest.ModuleDir(t, "testdata/mutants/complete-ignores-generation")
	fixed := suttest.ModuleDir(t, "sut/queues/seed")
	run := func(queue string) (string, bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestJudgeKeepsItsCases$", "-test.v")
		cmd.Env = append(os.Environ(), envJudgeAsUser+"="+queue+","+corpusDir)
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	out, passed := run(broken)
	saved, _ := filepath.Glob(filepath.Join(corpusDir, "*.ops"))
	switch {
	case passed:
		t.Fatalf("the broken queue passed:\n%s", out)
	case !strings.Contains(out, "property 1 (fencing)") || !strings.Contains(out, "program (queue's answers):"):
		t.Fatalf("the failure does not show the broken property and its program:\n%s", out)
	case len(saved) != 1 || !strings.Contains(out, saved[0]):
		t.Fatalf("the failure's program was not saved into %s as the output says (%v):\n%s", corpusDir, saved, out)
	}
	if out, passed = run(broken); passed || !strings.Contains(out, "saved programs fail") || !strings.Contains(out, saved[0]) {
		t.Fatalf("the saved case did not fail the broken queue again (passed: %v):\n%s", passed, out)
	}
	t.Logf("the broken queue's failure, as its user reads it:\n%s", out)
	if out, passed = run(fixed); !passed {
		t.Fatalf("the fixed queue fails its corpus:\n%s", out)
	}
}
