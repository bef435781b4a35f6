package program

import (
	"context"
	"strings"
	"testing"
	"time"

	"pgqcheck/model"
	"pgqcheck/sut"
)

// drainRunner answers a drain as a fixed-lease queue does whose first completion came after
// the lease it had ran out: refused, and then, once rescued and claimed again, accepted.
type drainRunner struct {
	w         *World
	claims    int
	completes int
	steps     []string
}

func (r *drainRunner) World() *World                                    { return r.w }
func (r *drainRunner) Sleep(ctx context.Context, d time.Duration) error { return nil }
func (r *drainRunner) Do(ctx context.Context, s Step) ([]Result, error) {
	r.steps = append(r.steps, s.String())
	switch s.(type) {
	case Snapshot:
		return []Result{{Rows: []model.Row{{ID: 1, State: model.Running}}}}, nil
	case Claim:
		r.claims++
		return []Result{{Out: model.Output{Found: r.claims <= 2, Job: 1, Gen: int64(r.claims)}}}, nil
	case Complete:
		r.completes++
		return []Result{{Out: model.Output{Rows: int64(r.completes - 1)}}}, nil
	}
	return []Result{{}}, nil
}

func TestDrainTakesAgainAJobWhoseLeaseRanOut(t *testing.T) {
	q, err := sut.LoadDir("../testdata/queues/rescued")
	if err != nil {
		t.Fatal(err)
	}
	if q.FixedLease == 0 {
		t.Fatal("the rescued queue fixes its lease: the case needs one")
	}
	w := NewWorld(q, WorkerName(0))
	w.Jobs = []int64{1}
	r := &drainRunner{w: w}
	if err := (Drain{}).Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(r.steps, "; ")
	if r.claims < 2 || r.completes != 2 || !strings.Contains(got, "complete newest; expire job 1; rescue; claim; complete newest") {
		t.Fatalf("a refused drain completion must be followed by expire, rescue, claim and complete; the drain ran: %s", got)
	}
}

// dueRunner answers a drain as a queue whose rescue made its job due a little later: the
// drain's first claim ran before that time and found nothing, though its answer came after it.
type dueRunner struct {
	w      *World
	claims int
	steps  []string
}

func (r *dueRunner) World() *World                                    { return r.w }
func (r *dueRunner) Sleep(ctx context.Context, d time.Duration) error { return nil }
func (r *dueRunner) Do(ctx context.Context, s Step) ([]Result, error) {
	r.steps = append(r.steps, s.String())
	switch s.(type) {
	case Snapshot:
		return []Result{{Rows: []model.Row{{ID: 1, State: model.Ready}}}}, nil
	case Claim:
		r.claims++
		// The answer comes back after the job's due time, so the clock has passed it.
		r.w.Clock.Window(sut.Clock{From: origin, To: origin.Add(r.w.DueBy + 30*time.Millisecond)}, 0)
		return []Result{{Out: model.Output{Found: r.claims == 2, Job: 1, Gen: 2}}}, nil
	}
	return []Result{{Out: model.Output{Rows: 1}}}, nil
}

var origin = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestDrainWaitsForAJobDueAfterItsClaimRan(t *testing.T) {
	q, err := sut.LoadDir("../testdata/queues/rescued-retries")
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorld(q, WorkerName(0))
	w.Jobs = []int64{1}
	w.Clock.Window(sut.Clock{From: origin, To: origin.Add(10 * time.Millisecond)}, 0)
	w.DueBy = 40 * time.Millisecond // the rescue's backoff
	r := &dueRunner{w: w}
	if err := (Drain{}).Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.steps, "; "); r.claims < 2 || !strings.Contains(got, "claim; snapshot; claim; complete newest") {
		t.Fatalf("a drain claim that found nothing before the last due time must be tried again; the drain ran: %s", got)
	}
}
