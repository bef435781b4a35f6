package program

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
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
	q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/queues/rescued"))
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
	q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/queues/rescued-retries"))
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

func TestDrainWaitsAgainForAJobItsOwnRescueDelayed(t *testing.T) {
	q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/queues/rescued-retries"))
	if err != nil {
		t.Fatal(err)
	}
	if q.FixedLease == 0 {
		t.Fatal("the rescued-retries queue fixes its lease: the case needs one")
	}
	w := NewWorld(q, WorkerName(0))
	w.Jobs = []int64{1}
	now := 10 * time.Millisecond
	read := func(d time.Duration) { now += d; w.Clock.Window(sut.Clock{From: origin, To: origin.Add(now)}, 0) }
	read(0)
	w.DueBy = 40 * time.Millisecond // a failure's backoff
	// As a queue answers on a loaded machine: the first claim runs before the backoff ends;
	// after the wait, the job's fixed lease runs out before its completion, the drain's rescue
	// makes it due 40 ms later, and the next claim again runs before that.
	claims, completes := 0, 0
	r := &fakeRunner{w: w, answer: func(s Step) []Result {
		switch s.(type) {
		case Snapshot:
			read(time.Millisecond)
			return []Result{{Rows: []model.Row{{ID: 1, State: model.Ready}}}}
		case Claim:
			claims++
			found := claims == 2 || claims == 4
			read(time.Millisecond)
			if claims == 2 || claims == 4 {
				read(40 * time.Millisecond) // the wait before it
			}
			return []Result{{Out: model.Output{Found: found, Job: 1, Gen: int64(claims / 2)}}}
		case Complete:
			completes++
			read(time.Millisecond)
			return []Result{{Out: model.Output{Rows: int64(completes - 1)}}}
		case Rescue:
			read(time.Millisecond)
			w.DueBy = now + 40*time.Millisecond
			return []Result{{Jobs: []int64{1}}}
		}
		read(time.Millisecond)
		return []Result{{Out: model.Output{Rows: 1}}}
	}}
	if err := (Drain{}).Run(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.steps, "; "); completes != 2 || !strings.Contains(got, "rescue; claim; snapshot; claim; complete newest") {
		t.Fatalf("a drain claim that found nothing before a due time its own rescue set must be tried again, after an earlier wait too; the drain ran: %s", got)
	}
}

func TestALostRescueAnswerCountsItsBackoff(t *testing.T) {
	q, err := sut.LoadDir(suttest.ModuleDir(t, "testdata/queues/rescued-retries"))
	if err != nil {
		t.Fatal(err)
	}
	w := NewWorld(q, WorkerName(0))
	w.Clock.Window(sut.Clock{From: origin, To: origin.Add(10 * time.Millisecond)}, 0)
	// The rescue's answer was lost: it may have made jobs due 40 ms after it ran, which was
	// no later than now.
	RescueStmt{}.Apply(w, w.Session(WorkerName(0)), Result{Err: &sut.LostReply{Err: context.Canceled}}, model.Window{From: 10 * time.Millisecond, To: model.Never})
	if w.DueBy < 50*time.Millisecond {
		t.Fatalf("after a rescue whose answer was lost, DueBy is %v; want at least 50ms (the last reading, 10ms, and the longest backoff, 40ms)", w.DueBy)
	}
}
