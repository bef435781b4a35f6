package schedule

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/generate"
	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// scripted makes the choices a test names, by label and in order; every other choice is the
// plain one (lo), as past the end of a fuzz input.
type scripted struct {
	t    *testing.T
	want map[string][]int
	rec  choiceLog
}

func (c *scripted) Choose(lo, hi int, label string) int {
	v := lo
	if q := c.want[label]; len(q) > 0 {
		v, c.want[label] = q[0], q[1:]
		if v < lo || v > hi {
			c.t.Fatalf("scripted choice %q = %d is outside [%d, %d]", label, v, lo, hi)
		}
	}
	c.rec.add(lo, hi, v, label)
	return v
}

func (c *scripted) log() *choiceLog { return &c.rec }

// kindAt is where a kind lies in a column's layout, for scripting a draw of it.
func kindAt(t *testing.T, col generate.Column, kind string) int {
	t.Helper()
	i := slices.Index(layoutNames(col, model.Can{Lock: true}), kind)
	if i < 0 {
		t.Fatalf("no %s in column %d", kind, col)
	}
	return i
}

func layoutNames(col generate.Column, can model.Can) []string {
	var names []string
	for _, k := range generate.Layout(col, can) {
		names = append(names, k.Name)
	}
	return names
}

// TestKindLayoutKeepsOldInputs: the kinds drawn before real time came in keep their places,
// so the FuzzScheduled inputs saved before (its corpus, campaigns' saved cases) draw what they
// drew; new kinds only ever go after them.
func TestKindLayoutKeepsOldInputs(t *testing.T) {
	for _, c := range []struct {
		col     generate.Column
		canLock bool
		old     []string
	}{
		{generate.Prefix, true, []string{"claim", "claim", "complete", "expire-claimed", "expire-claimed", "enqueue-one"}},
		{generate.Suffix, true, []string{"claim", "claim", "claim", "claim", "complete", "complete", "complete", "complete",
			"expire-claimed", "expire-claimed", "expire-claimed", "claim-txn", "claim-txn", "claim-txn", "lock-txn", "lock-txn", "enqueue-one", "snapshot"}},
		{generate.Suffix, false, []string{"claim", "claim", "claim", "claim", "complete", "complete", "complete", "complete",
			"expire-claimed", "expire-claimed", "expire-claimed", "claim-txn", "claim-txn", "claim-txn", "enqueue-one", "snapshot"}},
	} {
		got := layoutNames(c.col, model.Can{Lock: c.canLock})
		if len(got) < len(c.old) || !slices.Equal(got[:len(c.old)], c.old) {
			t.Errorf("layout %v no longer starts with the one saved inputs were drawn from, %v", got, c.old)
		}
	}
}

// TestRealTimeDraws: each real-time kind draws the operations it names, with its spans taken
// from the program package's scales.
func TestRealTimeDraws(t *testing.T) {
	rt := kindAt(t, generate.Suffix, "real-time")
	cases := []struct {
		kind   string
		script map[string][]int
		want   []string
	}{
		{"timed-claim", map[string][]int{"lease": {2}}, []string{"s1 claim lease " + generate.TimedLeases[2].String()}},
		{"lease-edge", map[string][]int{"lease": {0}, "margin": {1}, "after": {1}},
			[]string{"s1 claim lease " + generate.TimedLeases[0].String(), "s1 pause until " + generate.NearMargins[1].String() + " after its lease ends"}},
		{"near", map[string][]int{"margin": {2}}, []string{"s1 pause until " + generate.NearMargins[2].String() + " before its lease ends"}},
		{"real-pause", map[string][]int{"pause": {1}}, []string{"pause " + generate.RealPauses[1].String()}},
		{"timed-claim-txn", map[string][]int{"complete in txn": {1}, "wait": {2}, "lease": {1}, "hold": {1}},
			[]string{(program.ClaimTxn{S: "s1", Commit: true, Complete: true, Wait: generate.TxnWaits[2], Lease: generate.TimedLeases[1], Hold: generate.TxnHolds[1]}).String()}},
	}
	for _, c := range cases {
		script := map[string][]int{"op s1": {rt}, "real time": {kindAt(t, generate.RealTime, c.kind)}}
		for k, v := range c.script {
			script[k] = v
		}
		ch := &scripted{t: t, want: script}
		d := &drawnProgram{can: model.Can{Lock: true}, jobs: 1}
		var got []string
		for _, op := range d.next(ch, 1) {
			got = append(got, op.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s drew %q, want %q", c.kind, got, c.want)
		}
		// Every choice the draw made belongs to its operation, so that ShrinkInput removes
		// them together.
		for _, m := range ch.rec.marks[1:] {
			if !argLabels[m.label] {
				t.Errorf("%s: choice %q is not an argument label", c.kind, m.label)
			}
		}
	}
}

// TestScheduledRealTimeRun: a drawn run whose sessions take leases that end by themselves,
// pause to just past one (lease-edge), wait inside a claim transaction before the claim and
// before the completion, and pause outright. The pauses run as steps of the schedule; the
// lease that ran out is reclaimed by time alone; the history carries every statement's window
// and every claim's lease; the run holds on the seed queue; and the program it leaves reads
// back and replays.
func TestScheduledRealTimeRun(t *testing.T) {
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	s := NewScheduler(context.Background(), in, Config{Name: "realtime", ReportDir: t.TempDir()})
	defer s.Close()
	rt, rtk := kindAt(t, generate.Suffix, "real-time"), func(k string) int { return kindAt(t, generate.RealTime, k) }
	// s1 claims 50 ms after s0 took its 100 ms lease, so that it takes job 2 while job 1's lease
	// is certainly live: each run's measured windows say whether that held.
	premise := func(h *history.History) string {
		var s0, s1 model.Window
		for _, o := range h.Ops {
			switch {
			case o.Input.Kind == model.OpClaim && o.Input.Lease == 100*time.Millisecond:
				s0 = o.Input.At
			case o.Input.Kind == model.OpClaim && o.Input.Lease == 250*time.Millisecond:
				s1 = o.Input.At
			}
		}
		if end := s0.Shift(100 * time.Millisecond); s1.To >= end.From {
			return fmt.Sprintf("s1's claim ran in %s, not before s0's 100 ms lease could end (%s)", s1, end)
		}
		return ""
	}
	withTiming(t, 5, func() string {
		ch := &scripted{t: t, want: map[string][]int{
			"jobs": {2}, "suffix": {2, 2},
			// s0: a 100 ms lease and a pause to 10 ms past its end, then a plain claim; s1: a
			// claim transaction that waits 50 ms, claims with a 250 ms lease, waits 150 ms,
			// completes and commits, then a 20 ms pause.
			"op s0": {rt, 0}, "op s1": {rt, rt},
			"real time": {rtk("lease-edge"), rtk("timed-claim-txn"), rtk("real-pause")},
			"lease":     {0, 1}, "margin": {0}, "after": {1},
			"complete in txn": {1}, "wait": {1}, "hold": {1}, "pause": {0},
			// s0 claims; s1 begins, pauses and claims; s0 pauses past its lease and claims again;
			// s1 finishes.
			"next": {0, 1, 1, 1, 0, 0},
		}}
		s.run(t, ch, nil)
		if s.Last() != nil {
			t.Fatalf("the run failed on the seed queue:\n%s", s.Last())
		}
		if miss := premise(s.lastHistory); miss != "" {
			return miss
		}
		if miss := completedInLease(s.lastHistory, "s1", 250*time.Millisecond); miss != "" {
			return miss
		}
		trace := s.Trace()
		t.Logf("\n%s", trace)
		for _, want := range [][]string{
			{"s0 claim lease 100ms", "-> job 1 gen 1"},
			{"s0 pause until 10ms after its lease ends -> slept"},
			{". pause 50ms"},
			{"s1 claim lease 250ms", "-> job 2 gen 1"},
			// Nothing expired job 1: its lease ran out by time, and the claim took it back.
			{"s0 claim -> job 1 gen 2"},
			{". pause 150ms"},
			{"s1 complete newest -> job 2 gen 1: 1 row"},
			{". pause 20ms"},
		} {
			if !hasLine(trace, want...) {
				t.Errorf("the trace has no line with %q", want)
			}
		}
		if c := s.Counts; c.RealPauses != 4 || c.PausedMillis < 220 || c.TimedClaims != 2 {
			t.Errorf("counts: %d pauses (%d ms), %d timed claims; want 4 pauses of at least 220 ms, 2 timed claims", c.RealPauses, c.PausedMillis, c.TimedClaims)
		}
		checkWindows(t, s.lastHistory, map[time.Duration]int{100 * time.Millisecond: 1, 250 * time.Millisecond: 1, program.LongLease: 1})
		if v := check.Check(s.lastHistory, time.Minute); !v.OK {
			t.Fatalf("the history does not check: %s", v)
		}

		// The run's program is its interleaving, the pauses among its lines; it reads back and
		// replays to the same answers.
		text := s.lastProgram.Format()
		for _, line := range []string{"s0 claim lease 100ms", "s0 pause until 10ms after its lease ends", "s1 begin", "pause 50ms",
			"s1 claim lease 250ms", "pause 150ms", "s1 complete newest", "s1 commit", "pause 20ms"} {
			if !slices.Contains(strings.Split(text, "\n"), line) {
				t.Errorf("the program lacks the line %q:\n%s", line, text)
			}
		}
		p, err := program.Parse(text)
		if err != nil {
			t.Fatalf("the program does not read back: %v\n%s", err, text)
		}
		if p.Body() != s.lastProgram.Body() {
			t.Fatalf("the program reads back as\n%s\nnot\n%s", p.Body(), s.lastProgram.Body())
		}
		f, err := s.ReplayProgram(p)
		if err != nil || f != nil {
			t.Fatalf("the program does not replay (%v):\n%v", err, f)
		}
		if miss := premise(s.lastHistory); miss != "" {
			return "its replay: " + miss
		}
		if !hasLine(s.Trace(), "s0 claim -> job 1 gen 2") || s.Counts.RealPauses != 4 {
			t.Fatalf("the replay did not pause and reclaim as the run did:\n%s", s.Trace())
		}

		// Its choices, as a FuzzScheduled input (fuzz/testdata/fuzz/FuzzScheduled/seed-real-time
		// holds them), draw and run the same program.
		s.RunBytes(t, ch.rec.bytes)
		if s.Last() != nil || s.lastProgram.Body() != p.Body() {
			t.Fatalf("the choices as input bytes ran\n%s\nnot\n%s", s.lastProgram.Body(), p.Body())
		}
		return ""
	})
}

// withTiming runs attempt, a test whose schedule rests on real time passing as planned, until
// its timing premise holds (attempt then judges the run and returns "") or n attempts missed
// it. Each miss says what the measured windows showed; n misses fail with those figures.
func withTiming(t *testing.T, n int, attempt func() (miss string)) {
	t.Helper()
	var misses []string
	for i := 1; i <= n; i++ {
		miss := attempt()
		if miss == "" {
			if len(misses) > 0 {
				t.Logf("the timing premise held on attempt %d; before it: %s", i, strings.Join(misses, "; "))
			}
			return
		}
		misses = append(misses, fmt.Sprintf("attempt %d: %s", i, miss))
	}
	t.Fatalf("the timing premise did not hold in %d attempts (the machine is too loaded for this schedule): %s", n, strings.Join(misses, "; "))
}

// TestScheduledPauseKeepsWaitersInFlight: a pause stops the schedule, not the statements in
// flight: an expiry that waits behind another session's row lock stays waiting across a
// session's pause to its lease's edge, and returns once the lock is released, its window
// spanning the pause. A hand-written claim transaction line runs its pauses between its parts.
func TestScheduledPauseKeepsWaitersInFlight(t *testing.T) {
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	s := NewScheduler(context.Background(), in, Config{Name: "realtime", ReportDir: t.TempDir()})
	defer s.Close()
	p, err := program.Parse(`# mode: scheduled
# sessions: 3
s0 enqueue 3
s0 begin
s0 lock job 1
s1 claim lease 100ms
s2 expire job 1
s1 pause until 40ms before its lease ends
s0 commit
s1 complete newest
s2 begin; pause 20ms; claim lease 250ms; pause 30ms; complete it; commit
`)
	if err != nil {
		t.Fatal(err)
	}
	withTiming(t, 5, func() string {
		if f, err := s.ReplayProgram(p); err != nil || f != nil {
			t.Fatalf("the program fails on the seed queue (%v):\n%v", err, f)
		}
		// The pause to 40 ms before s1's lease ends must have had time left to sleep: a claim
		// slowed past that point leaves it nothing.
		if s.Counts.RealPauses != 3 {
			return fmt.Sprintf("%d of the 3 pauses slept:\n%s", s.Counts.RealPauses, s.Trace())
		}
		for _, c := range []struct {
			session string
			lease   time.Duration
		}{{"s1", 100 * time.Millisecond}, {"s2", 250 * time.Millisecond}} {
			if miss := completedInLease(s.lastHistory, c.session, c.lease); miss != "" {
				return miss
			}
		}
		judgeWaitersInFlight(t, s)
		return ""
	})
}

func judgeWaitersInFlight(t *testing.T, s *Scheduler) {
	t.Helper()
	trace := s.Trace()
	t.Logf("\n%s", trace)
	lines := strings.Split(trace, "\n")
	at := func(prefix string) int {
		for i, l := range lines {
			if strings.Contains(l, ". "+prefix) {
				return i
			}
		}
		t.Fatalf("no line %q in the trace", prefix)
		return -1
	}
	expire, pause, commit := at("s2 expire job 1"), at("s1 pause until 40ms"), at("s0 commit")
	if !(expire < pause && pause < commit) || !strings.Contains(lines[expire], "(after waiting)") {
		t.Fatalf("the expiry did not wait across the pause until the commit")
	}
	for _, want := range [][]string{{"s1 claim lease 100ms", "-> job 2 gen 1"}, {"s1 complete newest -> job 2 gen 1: 1 row"},
		{". pause 20ms"}, {"s2 claim lease 250ms", "-> job 1 gen 1"}, {". pause 30ms"}, {"s2 complete newest -> job 1 gen 1: 1 row"}} {
		if !hasLine(trace, want...) {
			t.Errorf("the trace has no line with %q", want)
		}
	}
	var expiry, claim history.Op
	for _, o := range s.lastHistory.Ops {
		switch {
		case o.Input.Kind == model.OpExpire && o.Input.Job == 1 && o.Session == "s2":
			expiry = o
		case o.Input.Kind == model.OpClaim && o.Input.Lease == 100*time.Millisecond && o.Session == "s1":
			claim = o
		}
	}
	// The pause lasted until 40 ms before s1's 100 ms lease ends, less how late the statement
	// after such a pause has been landing (learnt over the scheduler's runs); the expiry,
	// waiting all along, cannot have returned before the pause ended.
	end := claim.Input.At.From + 60*time.Millisecond
	if ls := s.Landings(); len(ls) == 1 {
		end = ls[0].End
	}
	if expiry.Input.At.To == model.Never || expiry.Input.At.To < end {
		t.Errorf("the expiry's window %s ends before the pause did (%s)", expiry.Input.At, model.Stamp(end))
	}
	checkWindows(t, s.lastHistory, map[time.Duration]int{100 * time.Millisecond: 1, 250 * time.Millisecond: 1})
	if v := check.Check(s.lastHistory, time.Minute); !v.OK {
		t.Fatalf("the history does not check: %s", v)
	}
}

// completedInLease is a timing premise: the completion of the job that session's claim with
// lease took landed before that lease could end, as the measured windows place both. A pause
// that overran on a loaded machine makes it miss, with the figures.
func completedInLease(h *history.History, session string, lease time.Duration) string {
	var claim, done *history.Op
	for i, o := range h.Ops {
		switch {
		case o.Session != session:
		case o.Input.Kind == model.OpClaim && o.Input.Lease == lease && o.Output.Found:
			claim = &h.Ops[i]
		case o.Input.Kind == model.OpComplete && claim != nil && o.Input.Job == claim.Output.Job && o.Input.Gen == claim.Output.Gen:
			done = &h.Ops[i]
		}
	}
	if claim == nil || done == nil {
		return fmt.Sprintf("%s's claim with a %v lease or its completion did not run", session, lease)
	}
	if end := claim.Input.At.Shift(lease); done.Input.At.To >= end.From {
		return fmt.Sprintf("%s's completion ran in %s, not before its %v lease could end (%s)", session, done.Input.At, lease, end)
	}
	return ""
}

// hasLine reports whether a line of the trace holds every one of parts.
func hasLine(trace string, parts ...string) bool {
	for _, l := range strings.Split(trace, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

// checkWindows: every queue statement of the run's own (the drain's aside) carries the window
// of database time it ran in, and its claims the leases asked, as many of each as leases says.
func checkWindows(t *testing.T, h *history.History, leases map[time.Duration]int) {
	t.Helper()
	got := map[time.Duration]int{}
	for _, o := range h.Ops {
		at := o.Input.At
		if o.Input.Kind == model.OpLock || o.Input.Kind == model.OpUnlock {
			continue // row locks are the harness's statements, read by no clock
		}
		if o.Output.Outcome == model.Returned && (at.To == model.Never || at.To < at.From || at.To == 0) {
			t.Errorf("%s %s: window %s", o.Session, model.DescribeOp(o.Input, o.Output), at)
		}
		if o.Input.Kind == model.OpClaim && o.Output.Found {
			got[o.Input.Lease]++
		}
	}
	for d, n := range leases {
		if got[d] < n {
			t.Errorf("%d claims with a %v lease in the history, want %d (%v)", got[d], d, n, got)
		}
	}
}
