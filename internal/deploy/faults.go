package deploy

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
)

// FaultKind is a fault a deployment run injects, each a way a worker of a real deployment
// fails: it stalls (a GC pause, a stopped container, a host that froze) and resumes, it dies
// with jobs in hand, it loses its connection, or the database restarts under it.
type FaultKind string

const (
	// Stall stops a worker's process group (SIGSTOP) and lets it run again (SIGCONT) after a
	// time beyond the horizon, when its job may have gone to another worker.
	Stall FaultKind = "stall"
	// Kill kills a worker with SIGKILL, with whatever jobs it holds; a new worker process
	// takes its place after a while.
	Kill FaultKind = "kill"
	// Cut cuts every connection of a worker at its fault proxy and refuses new ones for a
	// while: the worker is partitioned from the database.
	Cut FaultKind = "cut"
	// Restart crashes the server (SIGKILL of the postmaster) and starts it again.
	Restart FaultKind = "restart"
)

// HistoryName is the fault as a history and its timeline name it: the signal or the cut
// itself, apart from the fault proxy's per-statement faults of the other modes.
func (k FaultKind) HistoryName() string {
	switch k {
	case Stall:
		return "sigstop"
	case Kill:
		return "sigkill"
	case Cut:
		return "partition"
	}
	return history.FaultCrash
}

// FaultKinds are every kind, in the order a schedule draws from.
var FaultKinds = []FaultKind{Stall, Kill, Cut, Restart}

// ParseFaults reads a comma-separated list of fault kinds ("all": every kind; "none": none).
func ParseFaults(spec string) ([]FaultKind, error) {
	switch strings.TrimSpace(spec) {
	case "all":
		return FaultKinds, nil
	case "none", "":
		return nil, nil
	}
	var out []FaultKind
	for _, s := range strings.Split(spec, ",") {
		k := FaultKind(strings.TrimSpace(s))
		found := false
		for _, known := range FaultKinds {
			found = found || known == k
		}
		if !found {
			return nil, fmt.Errorf("unknown fault %q; the faults are stall, kill, cut and restart (or all, none)", k)
		}
		out = append(out, k)
	}
	return out, nil
}

// Fault is one fault of a schedule: when it is injected (from the run's start), what, on which
// worker slot (1-based; 0 for the server), and for how long it lasts.
type Fault struct {
	At     time.Duration `json:"at"`
	Kind   FaultKind     `json:"kind"`
	Worker int           `json:"worker,omitempty"`
	For    time.Duration `json:"for,omitempty"`
	// Retaken, for a stall: the worker runs on this long after another worker began an
	// execution of a job it held (or after For, when that never comes): a stall aimed at the
	// time a stale worker does harm, where the queue's horizon is long and uneven (a rescuer
	// that runs every 30 s).
	Retaken time.Duration `json:"retaken,omitempty"`
}

func (f Fault) String() string {
	target := "the server"
	if f.Worker > 0 {
		target = fmt.Sprintf("w%d", f.Worker)
	}
	s := fmt.Sprintf("+%.3fs %s %s", f.At.Seconds(), f.Kind, target)
	if f.For > 0 {
		s += fmt.Sprintf(" for %v", f.For.Round(time.Millisecond))
	}
	if f.Retaken > 0 {
		s += fmt.Sprintf(" (or until %v after its job is taken again)", f.Retaken.Round(time.Millisecond))
	}
	return s
}

// Schedule is the faults of one run, in order; a replay injects the same.
type Schedule []Fault

// Plan is what a schedule is drawn for.
type Plan struct {
	Kinds   []FaultKind
	Workers int
	// Window is the span faults are injected in; Every the mean gap between them.
	Window, Every time.Duration
	// Horizon is how long a job stays with a worker that holds it before the queue may give it
	// to another (the lease, or the rescuer's horizon); WorkMin and WorkMax bound a handler's
	// work.
	Horizon, WorkMin, WorkMax time.Duration
	// Aim: stalls end a little after the stalled worker's job was taken again (Fault.Retaken),
	// within the shortest work, so that the worker resumes while the job's next worker holds it.
	Aim bool
}

// Draw draws a schedule from seed. A stall lasts beyond the horizon by up to one of the longest
// works, so that it ends while the job's next worker may still hold it; a killed
// worker is replaced within a horizon; a cut lasts from a quarter of a horizon to two. At most
// all workers but one are out at once, so that some worker can take what the others held; no
// worker is hit while an earlier fault still holds it, nor the server while it restarts.
func Draw(seed uint64, p Plan) Schedule {
	if len(p.Kinds) == 0 || p.Workers == 0 || p.Every <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, 0x6465706c6f79))
	busy := make([]time.Duration, p.Workers+1) // until when each slot (0: the server) is held
	var out Schedule
	for at := span(r, p.Every/2, p.Every*3/2); at < p.Window; at += span(r, p.Every/2, p.Every*3/2) {
		k := p.Kinds[r.IntN(len(p.Kinds))]
		f := Fault{At: at, Kind: k}
		switch k {
		case Stall:
			f.For = p.Horizon + span(r, p.Horizon/20, p.Horizon/20+p.WorkMax)
			if p.Aim {
				f.For = 2 * p.Horizon
				f.Retaken = span(r, time.Millisecond, max(p.WorkMin*9/10, 2*time.Millisecond))
			}
		case Kill:
			f.For = span(r, 50*time.Millisecond, max(p.Horizon, 100*time.Millisecond))
		case Cut:
			f.For = span(r, p.Horizon/4, 2*p.Horizon)
		}
		// A horizon longer than the run (River's default hour) cannot be waited out: such a
		// fault lasts up to half the window, and the jobs it leaves held are reported, not
		// judged.
		f.For = min(f.For, max(p.Window/2, time.Millisecond))
		if k == Restart {
			if busy[0] > at {
				continue
			}
			busy[0] = at + time.Second
			out = append(out, f)
			continue
		}
		var free []int
		down := 0
		for w := 1; w <= p.Workers; w++ {
			if busy[w] > at {
				down++
			} else {
				free = append(free, w)
			}
		}
		if len(free) == 0 || p.Workers > 1 && down+1 >= p.Workers {
			continue
		}
		f.Worker = free[r.IntN(len(free))]
		busy[f.Worker] = at + f.For
		out = append(out, f)
	}
	return out
}

// span draws a duration in [lo, hi].
func span(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// Counts is how many faults of each kind the schedule holds.
func (s Schedule) Counts() map[FaultKind]int {
	out := map[FaultKind]int{}
	for _, f := range s {
		out[f.Kind]++
	}
	return out
}

// Summary is the schedule's counts in one line ("3 stall, 1 kill").
func (s Schedule) Summary() string {
	c := s.Counts()
	var parts []string
	for _, k := range FaultKinds {
		if c[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[k], k))
		}
	}
	if len(parts) == 0 {
		return "no faults"
	}
	return strings.Join(parts, ", ")
}

// sorted is the schedule in time order.
func (s Schedule) sorted() Schedule {
	out := append(Schedule(nil), s...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}
