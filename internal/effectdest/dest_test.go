package effectdest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
)

func start(t *testing.T, m effectdest.Mode) *effectdest.Dest {
	t.Helper()
	d, err := effectdest.Start(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// The same calls (a job's first owner, its retry after a lost reply, a later owner, the first
// owner again) leave one effect in force at a fencing destination and three at one without.
func TestModes(t *testing.T) {
	ctx := context.Background()
	calls := []effectdest.Call{{Job: 1, Fence: 1}, {Job: 1, Fence: 1}, {Job: 1, Fence: 2}, {Job: 1, Fence: 1}}
	for _, tc := range []struct {
		mode     effectdest.Mode
		outcomes []effectdest.Outcome
		inForce  int
	}{
		{effectdest.Every, []effectdest.Outcome{"applied", "applied", "applied", "applied"}, 4},
		{effectdest.Idempotent, []effectdest.Outcome{"applied", "duplicate", "duplicate", "duplicate"}, 1},
		{effectdest.Fenced, []effectdest.Outcome{"applied", "duplicate", "applied", "stale"}, 1},
	} {
		d := start(t, tc.mode)
		for i, c := range calls {
			c.Key = effectdest.KeyOf(c.Job)
			a, err := effectdest.Send(ctx, d.URL(), c)
			if err != nil {
				t.Fatal(err)
			}
			if a.Outcome != tc.outcomes[i] || a.Mode != tc.mode {
				t.Errorf("%s: call %d (fence %d) answered %s by %s, want %s", tc.mode, i+1, c.Fence, a.Outcome, a.Mode, tc.outcomes[i])
			}
		}
		got, err := effectdest.Read(ctx, d.URL())
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Jobs) != 1 || got.Jobs[0].InForce != tc.inForce || got.Jobs[0].Calls != 4 || tc.mode.Fences() == (got.Jobs[0].Duplicates() > 0) {
			t.Errorf("%s: counts %+v, want %d in force of 4 calls", tc.mode, got, tc.inForce)
		}
		d.Reset()
		if got := d.Counts(); len(got.Jobs) != 0 {
			t.Errorf("%s: a reset destination still holds %+v", tc.mode, got)
		}
	}
}

// A dropped reply applied the effect and the caller learns nothing; a cut applies nothing.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	d := start(t, effectdest.Every)
	_, err := effectdest.Send(ctx, d.URL(), effectdest.Call{Job: 1, Fence: 1, Fault: faultproxy.Fault{Kind: faultproxy.DropReply}})
	if !errors.Is(err, effectdest.ErrLost) {
		t.Fatalf("a dropped reply answered %v, want a lost reply", err)
	}
	_, err = effectdest.Send(ctx, d.URL(), effectdest.Call{Job: 2, Fence: 1, Fault: faultproxy.Fault{Kind: faultproxy.Cut}})
	if !errors.Is(err, effectdest.ErrLost) {
		t.Fatalf("a cut answered %v, want a lost reply", err)
	}
	got := d.Counts().Jobs
	if len(got) != 1 || got[0].Job != 1 || got[0].InForce != 1 {
		t.Errorf("after a dropped reply (job 1) and a cut (job 2): %+v", got)
	}
}

// A destination that was closed refuses connections: nothing outlives its run.
func TestClose(t *testing.T) {
	d, err := effectdest.Start(effectdest.Fenced)
	if err != nil {
		t.Fatal(err)
	}
	url := d.URL()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := effectdest.Read(context.Background(), url); err == nil {
		t.Error("a closed destination still answers")
	}
}
