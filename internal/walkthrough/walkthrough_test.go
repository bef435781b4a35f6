package walkthrough_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/internal/walkthrough"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// TestWalkthrough reproduces the seed's recorded results exactly (2|1, 1|1, 1|2, 0, 1) and the
// two release scenarios, on the seed and on every other built-in queue (they promise the same).
func TestWalkthrough(t *testing.T) {
	for _, name := range sut.Builtins() {
		t.Run(name, func(t *testing.T) {
			in := suttest.Install(t, sut.MustBuiltin(name))
			srv, err := pgserver.Shared(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var log strings.Builder
			ev, err := walkthrough.Run(context.Background(), in, walkthrough.ServerOf(srv), walkthrough.Options{Log: &log})
			if err != nil {
				t.Fatalf("%v\n%s", err, log.String())
			}
			checkSeedResults(t, ev)
			scenarios := 3
			if name == "lifecycle" {
				checkLifecycleResults(t, ev)
				scenarios += 3
			}
			if !ev.Passed {
				for _, a := range ev.Failed() {
					t.Errorf("%s: expected %q, got %q", a.Name, a.Expected, a.Actual)
				}
				t.Log(log.String())
			}
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			var back walkthrough.Evidence
			if err := json.Unmarshal(b, &back); err != nil || back.Backend == "" || back.Version == "" || len(back.Scenarios) != scenarios {
				t.Fatalf("evidence does not round-trip through JSON with backend, version and %d scenarios: %v", scenarios, err)
			}
		})
	}
}

func checkSeedResults(t *testing.T, ev *walkthrough.Evidence) {
	t.Helper()
	want := map[string]map[string]string{
		walkthrough.ScenarioSeed: {
			walkthrough.AssertSkipLocked:   "2|1",
			walkthrough.AssertAfterRelease: "1|1",
			walkthrough.AssertReclaim:      "1|2",
			walkthrough.AssertStaleFenced:  "0",
			walkthrough.AssertCurrentWins:  "1",
		},
		walkthrough.ScenarioCancel: {
			walkthrough.AssertSkipLocked:   "2|1",
			walkthrough.AssertAfterRelease: "1|1",
			walkthrough.AssertAbortedOpen:  "E",
		},
		walkthrough.ScenarioTerminate: {
			walkthrough.AssertSkipLocked:   "2|1",
			walkthrough.AssertAfterRelease: "1|1",
		},
	}
	checkAssertions(t, ev, want)
	if n := ev.Scenario(walkthrough.ScenarioCancel).Notes; len(n) == 0 || !strings.Contains(n[0], "aborted") || !strings.Contains(n[0], "before the client rolled back") {
		t.Errorf("the cancel scenario does not record when the aborted transaction released the lock: %q", n)
	}
}

// checkLifecycleResults: on the lifecycle queue, its three scenarios ran and each assertion
// held with the value the queue's declaration implies (three attempts, then dead).
func checkLifecycleResults(t *testing.T, ev *walkthrough.Evidence) {
	t.Helper()
	want := map[string]map[string]string{
		walkthrough.ScenarioRetries: {
			walkthrough.AssertFirstAttempt: "1|1",
			walkthrough.AssertBackoffWaits: "2|1",
			walkthrough.AssertRetried:      "1|3",
			walkthrough.AssertDeadKept:     "1|dead|3|f|3|" + walkthrough.Failure(3),
			walkthrough.AssertDeadStays:    walkthrough.NoRows,
		},
		walkthrough.ScenarioRenewal: {
			walkthrough.AssertRenewed:     "1",
			walkthrough.AssertRenewSkips:  walkthrough.NoRows,
			walkthrough.AssertRenewedWins: "1",
		},
		walkthrough.ScenarioEffect: {
			walkthrough.AssertStaleRefused: "0",
			walkthrough.AssertEffectGone:   walkthrough.NoRows,
			walkthrough.AssertCurrentWins:  "1",
			walkthrough.AssertOwnerEffect:  "1|1",
		},
	}
	checkAssertions(t, ev, want)
	for sc := range want {
		s := ev.Scenario(sc)
		if len(s.Notes) == 0 {
			t.Errorf("%s: no note says what the scenario showed", sc)
		}
	}
}

// checkAssertions: each scenario named ran, recorded its statements, and each assertion named
// held with the value given (the last, where a scenario repeats one).
func checkAssertions(t *testing.T, ev *walkthrough.Evidence, want map[string]map[string]string) {
	t.Helper()
	for sc, asserts := range want {
		s := ev.Scenario(sc)
		if s == nil {
			t.Fatalf("no scenario %s in the evidence", sc)
		}
		for name, v := range asserts {
			var a *walkthrough.Assertion
			for _, x := range s.Assertions {
				if x.Name == name {
					a = x
				}
			}
			switch {
			case a == nil:
				t.Errorf("%s: no assertion %q", sc, name)
			case a.Actual != v || a.Expected != v:
				t.Errorf("%s: %s: expected %q, assertion expected %q, got %q", sc, name, v, a.Expected, a.Actual)
			}
		}
		if len(s.Steps) == 0 {
			t.Errorf("%s: no statements recorded", sc)
		}
	}
}
