// Package timeline computes a concurrent run's operational measures (the seed's claim latency,
// ready-job age, expired-running count, attempts per job and rejected completions, with
// throughput and latency per operation kind over time) and draws them, with the run's fault
// windows, as one self-contained HTML page.
//
// It reads a run as a list of operations and faults on one clock and knows nothing of how
// they were recorded: package linear/report turns a history.History into a Run. That keeps the
// dependency one way (report writes the page into its folders; this package never imports the
// linear packages).
package timeline

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
)

// Never is the return time of an operation whose answer never came back (history.Never).
const Never int64 = math.MaxInt64

// Op is one operation of a run, on the run's clock.
type Op struct {
	Session string
	Input   model.Input
	Output  model.Output
	Call    int64
	Return  int64 // Never when the outcome is unknown
}

// Fault is something done to a session that is not a queue operation. Until is when it ended,
// for faults that last (a delay, a stall, a cut connection); 0 for an instant one (a cancel),
// whose window is drawn up to the target session's next operation.
type Fault struct {
	At     int64
	Until  int64
	Kind   string
	Target string
}

// Run is what the page draws.
type Run struct {
	Title  string // the first line of the page: which queue, which run
	Clock  string // "ns" (nanoseconds) or "logical" (an event counter)
	Ops    []Op
	Faults []Fault
	Marks  []Mark
}

// Mark is an instant of the run worth a line across the charts: where its phases change
// (a stress run's drain, whose expiries and claims dwarf the traffic's).
type Mark struct {
	At    int64  `json:"at"`
	Label string `json:"label"`
}

// DefaultBuckets is how many time buckets the series have.
const DefaultBuckets = 120

// Measures are a run's operational measures. Times are on the run's clock (Clock says which):
// nanoseconds, or events for a logical clock.
type Measures struct {
	Clock string `json:"clock"`
	Start int64  `json:"start"` // the first call
	End   int64  `json:"end"`   // the last known return (or call, for an unknown last operation)
	Ops   int    `json:"ops"`

	// ClaimLatency: claims that came back, from call to return, found a job or not.
	ClaimLatency Summary `json:"claim_latency"`
	// ReadyAge: how long each claimed job waited, from its enqueue's return to its first
	// claim's return. Unclaimed: jobs enqueued and never claimed in the run.
	ReadyAge  Summary `json:"ready_age"`
	Unclaimed int     `json:"unclaimed"`
	// ExpiredRunningPeak is the most jobs at once that were running with their lease over (an
	// expiry, or a timed lease's length past its claim's return) and not yet reclaimed.
	ExpiredRunningPeak int `json:"expired_running_peak"`
	// TrafficExpiredRunningPeak is the same peak before the run's first mark (a stress run's
	// drain, which expires every lease by design); the whole run's when it has no mark.
	TrafficExpiredRunningPeak int `json:"traffic_expired_running_peak"`
	// Attempts is the claims per claimed job: jobs by how many claims took them.
	Attempts Attempts `json:"attempts"`
	// Completions changed a row; RejectedCompletions came back having changed none.
	Completions         int `json:"completions"`
	RejectedCompletions int `json:"rejected_completions"`
	// Life is the job lifecycle's measures (all zero on a queue without one).
	Life Life `json:"life,omitzero"`

	Faults     []Window    `json:"faults,omitempty"`
	Marks      []Mark      `json:"marks,omitempty"`
	Statements []Statement `json:"kinds"`
	// Series over time, one point per bucket of BucketWidth from Start.
	BucketWidth int64 `json:"bucket_width"`
	// ExpiredRunning is, per bucket, the most jobs running with their lease over at once;
	// ReadyWaiting, the ready jobs waiting at the bucket's end; OldestReady, the oldest one's age then.
	ExpiredRunning []int   `json:"expired_running"`
	ReadyWaiting   []int   `json:"ready_waiting"`
	OldestReady    []int64 `json:"oldest_ready"`
}

// Life is what a run did of a job's life beyond its claim and completion. Only answers that
// came back count.
type Life struct {
	// Failures were accepted (one row), Final of them not retryable; Retries are claims that took
	// a job again after an accepted failure of it.
	Failures int `json:"failures"`
	Final    int `json:"final"`
	Retries  int `json:"retries"`
	// Dead are the jobs whose last observation shows them dead.
	Dead int `json:"dead"`
	// Renewals were accepted: a claim's renewal that changed its row, or a heartbeat's job.
	Renewals  int `json:"renewals"`
	Scheduled int `json:"scheduled"` // jobs enqueued to run later
	// Effects were written in transactions that committed; InTable is the business table's
	// count of them at its last reading (-1: never read).
	Effects int   `json:"effects"`
	InTable int64 `json:"in_table"`
}

// any reports whether the run did any of it.
func (l Life) any() bool {
	return l.Failures+l.Retries+l.Dead+l.Renewals+l.Scheduled+l.Effects > 0 || l.InTable > 0
}

// Summary is a distribution of durations.
type Summary struct {
	Count int   `json:"count"`
	P50   int64 `json:"p50"`
	P99   int64 `json:"p99"`
	Max   int64 `json:"max"`
}

// Attempts is how many claims each claimed job took.
type Attempts struct {
	Jobs   int     `json:"jobs"`
	Claims int     `json:"claims"`
	Mean   float64 `json:"mean"`
	Max    int     `json:"max"`
	// ByCount[i] is how many jobs were claimed i+1 times.
	ByCount []int `json:"by_count"`
}

// Statement is one operation kind's throughput and latency, over the run and per bucket.
type Statement struct {
	Name    string  `json:"kind"`
	Ops     int     `json:"ops"`     // statements (a snapshot's per-job observations count once)
	Unknown int     `json:"unknown"` // answers that never came back
	Latency Summary `json:"latency"` // of those that came back
	Points  []Point `json:"points"`
}

// Point is one bucket of a kind: statements that came back in it, with their latency, and
// statements called in it whose answer never came.
type Point struct {
	Ops     int   `json:"ops"`
	Unknown int   `json:"unknown,omitempty"`
	P50     int64 `json:"p50,omitempty"`
	P99     int64 `json:"p99,omitempty"`
}

// Window is a fault as drawn: from At to To. Derived: the fault has no end of its own, so the
// window runs to the target session's next operation (or to the run's end).
type Window struct {
	Kind    string `json:"kind"`
	Target  string `json:"target"`
	From    int64  `json:"from"`
	To      int64  `json:"to"`
	Derived bool   `json:"derived,omitempty"`
}

// statementOrder is the order statements are listed and coloured in; others follow, sorted.
var statementOrder = []string{"enqueue", "claim", "complete", "expire", "snapshot", "lock", "unlock"}

// Compute measures a run with the given number of buckets (DefaultBuckets when 0 or less).
func Compute(r *Run, buckets int) *Measures {
	if buckets <= 0 {
		buckets = DefaultBuckets
	}
	m := &Measures{Clock: r.Clock}
	ops := statements(r.Ops)
	m.Ops = len(ops)
	m.Start, m.End = span(ops, r.Faults)
	m.BucketWidth = max(1, ceilDiv(m.End-m.Start, int64(buckets)))
	n := int(ceilDiv(m.End-m.Start+1, m.BucketWidth))
	bucket := func(t int64) int { return min(n-1, max(0, int((t-m.Start)/m.BucketWidth))) }

	m.Statements = statementsOf(ops, n, bucket)
	var claimLat []int64
	for _, o := range ops {
		if o.Return == Never || o.Output.Outcome != model.Returned {
			continue
		}
		switch f := model.FactsOf(o.Input, o.Output); {
		case f.Claims:
			claimLat = append(claimLat, o.Return-o.Call)
		case f.Ends && f.Accepted:
			m.Completions++
		case f.Ends:
			m.RejectedCompletions++
		}
	}
	m.ClaimLatency = summarize(claimLat)
	m.Life = life(r.Ops)
	m.jobs(r.Ops, n, bucket)
	m.Faults = windows(r.Faults, r.Ops, m.End)
	m.Marks = r.Marks
	m.TrafficExpiredRunningPeak = m.ExpiredRunningPeak
	if b := m.TrafficBuckets(); b < len(m.ExpiredRunning) {
		m.TrafficExpiredRunningPeak = 0
		for _, c := range m.ExpiredRunning[:b] {
			m.TrafficExpiredRunningPeak = max(m.TrafficExpiredRunningPeak, c)
		}
	}
	return m
}

// TrafficBuckets is how many buckets lie wholly before the run's first mark: the traffic, as
// against the phase a mark begins (all of them when the run has no mark).
func (m *Measures) TrafficBuckets() int {
	n := len(m.ExpiredRunning)
	for _, mk := range m.Marks {
		n = min(n, int((mk.At-m.Start)/m.BucketWidth))
	}
	return max(0, n)
}

// statements drops the per-job copies of a snapshot: one statement, one operation. (Pointers:
// an Op is large, and a long run has hundreds of thousands.)
func statements(ops []Op) []*Op {
	type key struct {
		session string
		call    int64
	}
	seen := map[key]bool{}
	out := make([]*Op, 0, len(ops))
	for i := range ops {
		o := &ops[i]
		if model.FactsOf(o.Input, o.Output).Observes {
			k := key{o.Session, o.Call}
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		out = append(out, o)
	}
	return out
}

func span(ops []*Op, faults []Fault) (int64, int64) {
	from, to := int64(Never), int64(0)
	for _, o := range ops {
		from, to = min(from, o.Call), max(to, o.Call)
		if o.Return != Never {
			to = max(to, o.Return)
		}
	}
	for _, f := range faults {
		from, to = min(from, f.At), max(to, f.At, f.Until)
	}
	if from == Never {
		return 0, 0
	}
	return from, to
}

func statementsOf(ops []*Op, n int, bucket func(int64) int) []Statement {
	type acc struct {
		k   Statement
		all []int64
		per [][]int64
	}
	byKind := map[string]*acc{}
	for _, o := range ops {
		name := model.FactsOf(o.Input, o.Output).Statement
		a := byKind[name]
		if a == nil {
			a = &acc{k: Statement{Name: name, Points: make([]Point, n)}, per: make([][]int64, n)}
			byKind[name] = a
		}
		a.k.Ops++
		if o.Return == Never {
			a.k.Unknown++
			a.k.Points[bucket(o.Call)].Unknown++
			continue
		}
		b := bucket(o.Return)
		a.k.Points[b].Ops++
		a.all = append(a.all, o.Return-o.Call)
		a.per[b] = append(a.per[b], o.Return-o.Call)
	}
	var out []Statement
	for _, a := range byKind {
		a.k.Latency = summarize(a.all)
		for i, lat := range a.per {
			s := summarize(lat)
			a.k.Points[i].P50, a.k.Points[i].P99 = s.P50, s.P99
		}
		out = append(out, a.k)
	}
	rank := map[string]int{}
	for i, k := range statementOrder {
		rank[k] = i + 1
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rank[out[i].Name], rank[out[j].Name]
		if ri == 0 {
			ri = len(statementOrder) + 1
		}
		if rj == 0 {
			rj = len(statementOrder) + 1
		}
		if ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// jobs follows each job through its enqueue, claims, expiries and completion for the
// ready-job age, the attempts and the expired-running count. Only answers that came back
// count: an unknown claim may have taken a job, but the run never learned which.
func (m *Measures) jobs(ops []Op, n int, bucket func(int64) int) {
	type job struct {
		enqueued, firstClaim int64 // returns; -1 when not seen
		claims               int
		events               []*Op
	}
	byID := map[int64]*job{}
	get := func(id int64) *job {
		j := byID[id]
		if j == nil {
			j = &job{enqueued: -1, firstClaim: -1}
			byID[id] = j
		}
		return j
	}
	for i := range ops {
		o := &ops[i]
		if o.Return == Never || o.Output.Outcome != model.Returned {
			continue
		}
		switch f := model.FactsOf(o.Input, o.Output); {
		case f.Creates && f.Named:
			get(f.Job).enqueued = o.Return
		case f.Took:
			j := get(f.Job)
			j.claims++
			if j.firstClaim < 0 || o.Return < j.firstClaim {
				j.firstClaim = o.Return
			}
			j.events = append(j.events, o)
		case f.Expires || f.Ends:
			j := get(f.Job)
			j.events = append(j.events, o)
		}
	}

	var ages []int64
	var expired []interval
	var ready []interval
	for _, j := range byID {
		if j.claims > 0 {
			m.Attempts.Jobs++
			m.Attempts.Claims += j.claims
			m.Attempts.Max = max(m.Attempts.Max, j.claims)
			for len(m.Attempts.ByCount) < j.claims {
				m.Attempts.ByCount = append(m.Attempts.ByCount, 0)
			}
			m.Attempts.ByCount[j.claims-1]++
		}
		if j.enqueued >= 0 {
			end := m.End
			if j.firstClaim >= 0 {
				ages = append(ages, max(0, j.firstClaim-j.enqueued))
				end = j.firstClaim
			} else {
				m.Unclaimed++
			}
			ready = append(ready, interval{j.enqueued, end})
		}
		expired = append(expired, expiredSpans(j.events, m.End)...)
	}
	if m.Attempts.Jobs > 0 {
		m.Attempts.Mean = float64(m.Attempts.Claims) / float64(m.Attempts.Jobs)
	}
	m.ReadyAge = summarize(ages)
	m.ExpiredRunning = peaks(expired, n, bucket)
	for _, c := range m.ExpiredRunning {
		m.ExpiredRunningPeak = max(m.ExpiredRunningPeak, c)
	}
	m.ReadyWaiting = make([]int, n)
	m.OldestReady = make([]int64, n)
	for b := 0; b < n; b++ {
		t := min(m.End, m.Start+int64(b+1)*m.BucketWidth-1)
		for _, iv := range ready {
			if iv.from <= t && t < iv.to {
				m.ReadyWaiting[b]++
				m.OldestReady[b] = max(m.OldestReady[b], t-iv.from)
			}
		}
	}
}

type interval struct{ from, to int64 }

// expiredSpans are the spans in which a job was running with its lease over: from an expiry's
// return, or from a timed claim's return plus its lease (by then the lease has certainly
// ended on the database's clock too, which runs at the same rate), to the next claim's return.
// A completion that changed a row ends the job's running; it cannot succeed on a lease that
// is over, so it only ends spans the recorded times place too early.
func expiredSpans(events []*Op, end int64) []interval {
	sort.Slice(events, func(a, b int) bool { return events[a].Return < events[b].Return })
	var out []interval
	running, over := false, int64(-1) // over: when the current lease ends; -1 never
	closeAt := func(t int64) {
		if running && over >= 0 && over < t {
			out = append(out, interval{over, t})
		}
	}
	for _, o := range events {
		switch f := model.FactsOf(o.Input, o.Output); {
		case f.Took:
			closeAt(o.Return)
			running, over = true, -1
			if program.TimedLease(f.Lease) {
				over = o.Return + f.Lease.Nanoseconds()
			}
		case f.Expires:
			if running && (over < 0 || o.Return < over) {
				over = o.Return
			}
		case f.Ends && f.Accepted:
			closeAt(o.Return)
			running = false
		}
	}
	closeAt(end + 1)
	return out
}

// peaks is, per bucket, the most intervals open at once within it.
func peaks(ivs []interval, n int, bucket func(int64) int) []int {
	type edge struct {
		t int64
		d int
	}
	var edges []edge
	for _, iv := range ivs {
		edges = append(edges, edge{iv.from, 1}, edge{iv.to, -1})
	}
	// Ends before starts at the same instant: a reclaim at t closes one span as another opens.
	sort.Slice(edges, func(a, b int) bool {
		if edges[a].t != edges[b].t {
			return edges[a].t < edges[b].t
		}
		return edges[a].d < edges[b].d
	})
	out := make([]int, n)
	cur, b := 0, 0
	for _, e := range edges {
		eb := bucket(e.t)
		for ; b < eb; b++ {
			out[b+1] = max(out[b+1], cur) // open across the boundary
		}
		cur += e.d
		out[eb] = max(out[eb], cur)
	}
	return out
}

// windows turns faults into drawn windows. An instant fault (a cancel, a termination) lasts
// as long as the statement it hit: its window ends when the target session's statement in
// flight came back or, when that one's answer was lost, when the session next called an
// operation (on a new connection). A fault that hit an idle session is an instant.
func windows(faults []Fault, ops []Op, end int64) []Window {
	bySession := map[string][]Op{}
	for _, o := range ops {
		l := lineage(o.Session)
		bySession[l] = append(bySession[l], o)
	}
	for _, os := range bySession {
		sort.Slice(os, func(a, b int) bool { return os[a].Call < os[b].Call })
	}
	out := make([]Window, 0, len(faults))
	for _, f := range faults {
		w := Window{Kind: f.Kind, Target: f.Target, From: f.At, To: f.Until}
		if w.To <= w.From {
			w.Derived, w.To = true, f.At
			os := bySession[lineage(f.Target)]
			next := sort.Search(len(os), func(i int) bool { return os[i].Call > f.At })
			// A session runs one statement at a time: the last one called before the fault is
			// the only one it can have hit (a snapshot's rows share its call and its return).
			if next > 0 {
				switch hit := os[next-1]; {
				case hit.Return == Never:
					w.To = end
					if next < len(os) {
						w.To = os[next].Call
					}
				case hit.Return > f.At:
					w.To = hit.Return
				}
			}
		}
		out = append(out, w)
	}
	return out
}

// lineage is a session's name without its reconnection count: "w2/3" is w2's third
// connection, and a fault on "w2" ends when any of them next acts.
func lineage(session string) string {
	if i := strings.LastIndexByte(session, '/'); i > 0 {
		if _, err := strconv.Atoi(session[i+1:]); err == nil {
			return session[:i]
		}
	}
	return session
}

func summarize(xs []int64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return Summary{Count: len(s), P50: quantile(s, 0.50), P99: quantile(s, 0.99), Max: s[len(s)-1]}
}

// quantile is the nearest-rank quantile of sorted values: a value that occurred.
func quantile(sorted []int64, q float64) int64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(len(sorted)-1, max(0, i))]
}

func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// Duration formats a span on the run's clock for people.
func (m *Measures) Duration(d int64) string {
	if m.Clock == "logical" {
		return fmtInt(d) + " ev"
	}
	return fmtDur(time.Duration(d))
}

// Summary is the measures in a few lines, as commands and reports print them.
func (m *Measures) Summary() string {
	d := m.Duration
	sum := func(s Summary) string {
		if s.Count == 0 {
			return "none"
		}
		return "p50 " + d(s.P50) + ", p99 " + d(s.P99) + ", max " + d(s.Max)
	}
	return "claim latency " + sum(m.ClaimLatency) + "; ready-job age " + sum(m.ReadyAge) +
		"\nexpired-running peak " + fmtInt(int64(m.TrafficExpiredRunningPeak)) + m.afterMark() +
		"; attempts per job " + strconvMean(m.Attempts.Mean) + " (max " + fmtInt(int64(m.Attempts.Max)) + ")" +
		"; rejected completions " + fmtInt(int64(m.RejectedCompletions)) + " of " + fmtInt(int64(m.RejectedCompletions+m.Completions)) +
		"; " + fmtInt(int64(len(m.Faults))) + " fault window(s)\n"
}

// afterMark is the whole run's expired-running peak, when a later phase (the drain) exceeds
// the traffic's.
func (m *Measures) afterMark() string {
	if m.ExpiredRunningPeak == m.TrafficExpiredRunningPeak {
		return ""
	}
	return " (" + fmtInt(int64(m.ExpiredRunningPeak)) + " with the " + textfmt.FirstWord(m.Marks[0].Label) + ")"
}

func strconvMean(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// life counts the lifecycle's operations: failures, the claims that retried them, dead jobs,
// renewals, jobs scheduled for later, effects committed and the business table's last count.
// What every mode counts comes from the one tally (program.Counts); the rest follows each
// job through the run.
func life(ops []Op) Life {
	l := Life{InTable: -1}
	var c program.Counts
	failed := map[int64]bool{}      // jobs with an accepted failure no claim has taken since
	final := map[int64]*Op{}        // each job's last observation
	counted := map[int64]*Op{}      // each job's last effects reading
	byCall := make([]*Op, len(ops)) // ops in call order
	for i := range ops {
		byCall[i] = &ops[i]
	}
	sort.SliceStable(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	for _, o := range byCall {
		if o.Return == Never || o.Output.Outcome != model.Returned {
			continue
		}
		c.Op(o.Input, o.Output)
		switch f := model.FactsOf(o.Input, o.Output); {
		case f.Fails && f.Accepted:
			if f.Final {
				l.Final++
			}
			failed[f.Job] = true
		case f.Took && failed[f.Job]:
			l.Retries++
			failed[f.Job] = false
		case f.Tallies:
			counted[f.Job] = o
		case f.Observes:
			final[f.Job] = o
		}
	}
	l.Failures, l.Renewals, l.Scheduled, l.Effects = int(c.Failures), int(c.Renewals), int(c.Scheduled), int(c.Effects)
	for _, o := range final {
		if o.Output.Found && o.Output.State == model.Dead {
			l.Dead++
		}
	}
	if len(counted) > 0 {
		l.InTable = 0
		for _, o := range counted {
			l.InTable += o.Output.Rows
		}
	}
	return l
}
