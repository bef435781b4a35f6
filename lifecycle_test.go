package pgqcheck_test

import (
	"os"
	"path/filepath"
	"testing"

	"pgqcheck/sut"
	"pgqcheck/sut/suttest"
)

// lifecycleFormsDir holds correct queues of lifecycle forms that only the sequential suites
// judge: their jobs go dead when lapsed leases use up their attempts, which a concurrent run's
// drain accounting does not count as an end yet.
const lifecycleFormsDir = "testdata/lifecycle"

// TestPropLifecycleForms and TestPropLifecycleFormsLeaseTime judge each queue of
// lifecycleFormsDir as TestPropQueue and TestPropLeaseTime judge the others: the model beside
// the queue, one operation at a time, without and with real time.
func TestPropLifecycleForms(t *testing.T) {
	for _, q := range lifecycleForms(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			propQueue(t, q, false)
		})
	}
}

func TestPropLifecycleFormsLeaseTime(t *testing.T) {
	t.Cleanup(fewerChecks(5)) // restored once every subtest ended
	for _, q := range lifecycleForms(t) {
		t.Run(q.Name, func(t *testing.T) {
			t.Parallel()
			propQueue(t, q, true)
		})
	}
}

func lifecycleForms(t *testing.T) []*sut.Queue {
	t.Helper()
	if dir := os.Getenv(sut.EnvSQLDir); dir != "" {
		t.Skipf("judges the suite's own lifecycle queues, not %s", dir)
	}
	root := suttest.ModuleDir(t, lifecycleFormsDir)
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []*sut.Queue
	for _, e := range ents {
		q, err := sut.LoadDir(filepath.Join(root, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		t.Fatalf("no queue under %s", lifecycleFormsDir)
	}
	return out
}
