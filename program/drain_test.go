package program

import (
	"context"
	"strings"
	"testing"
	"time"

	"pgqcheck/model"
	"pgqcheck/sut"
)

// fakeRunner answers a drain's steps with answer, and records them.
type fakeRunner struct {
	w      *World
	answer func(Step) []Result
	steps  []string
}

func (r *fakeRunner) World() *World                                    { return r.w }
func (r *fakeRunner) Sleep(ctx context.Context, d time.Duration) error { return nil }
func (r *fakeRunner) Do(ctx context.Context, s Step) ([]Result, error) {
	r.steps = append(r.steps, s.String())
	return r.answer(s), nil
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
	// As a fixed-lease queue answers whose first completion came after the lease it had ran
	// out: refused, and then, once rescued and claimed again, accepted.
	claims, completes := 0, 0
	r := &fakeRunner{w: w, answer: func(s Step) []Result {
		switch s.(type) {
		case Snapshot:
			return []Result{{Rows: []model.Row{{ID: 1, State: model.Running}}}}
		case Claim:
			claims++
			return []Result{{Out: model.Output{Found: claims <= 2, Job: 1, Gen: int64(claims)}}}
		case Complete:
			completes++
			return []Result{{Out: model.Output{Rows: int64(completes - 1)}}}
		}
		return []Result{{}}
	}}
	if err := (Drain{}).Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(r.steps, "; ")
	if claims < 2 || completes != 2 || !strings.Contains(got, "complete newest; expire job 1; rescue; claim; complete newest") {
		t.Fatalf("a refused drain completion must be followed by expire, rescue, claim and complete; the drain ran: %s", got)
	}
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
	// As a queue answers whose rescue made its job due a little later: the drain's first claim
	// ran before that time and found nothing, though its answer came after it.
	claims := 0
	r := &fakeRunner{w: w, answer: func(s Step) []Result {
		switch s.(type) {
		case Snapshot:
			return []Result{{Rows: []model.Row{{ID: 1, State: model.Ready}}}}
		case Claim:
			claims++
			w.Clock.Window(sut.Clock{From: origin, To: origin.Add(w.DueBy + 30*time.Millisecond)}, 0)
			return []Result{{Out: model.Output{Found: claims == 2, Job: 1, Gen: 2}}}
		}
		return []Result{{Out: model.Output{Rows: 1}}}
	}}
	if err := (Drain{}).Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.steps, "; "); claims < 2 || !strings.Contains(got, "claim; snapshot; claim; complete newest") {
		t.Fatalf("a drain claim that found nothing before the last due time must be tried again; the drain ran: %s", got)
	}
}
