package observed

import (
	"sort"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/linear/check"
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/model"
)

// FirstViolation is the earliest time, from the run's first reading, by which job's
// operations already break a promise: the shortest prefix of them, as an observer who stopped
// watching then would have seen them (an answer not yet back is an answer not known), that the
// checks reject. It reports false when no prefix of the job's own operations shows the
// violation (one only the drain's accounting shows).
func FirstViolation(h *history.History, job int64) (time.Duration, bool) {
	cut := report.CutToJob(h, job)
	var times []int64
	for _, o := range cut.Ops {
		if o.Return != history.Never {
			times = append(times, o.Return)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	broken := func(t int64) bool {
		v := check.Check(prefix(cut, t), time.Minute)
		return !v.OK && v.Violation != nil
	}
	if len(times) == 0 || !broken(times[len(times)-1]) {
		return 0, false
	}
	i := sort.Search(len(times), func(i int) bool { return broken(times[i]) })
	return time.Duration(times[i]), true
}

// prefix is what of h an observer had seen by time t.
func prefix(h *history.History, t int64) *history.History {
	p := *h
	p.Ops = nil
	for _, o := range h.Ops {
		if o.Call > t {
			continue
		}
		if o.Return > t && o.Return != history.Never {
			o.Return = history.Never
			o.Output = model.Output{Outcome: model.Unknown}
			o.Input.At.To = model.Never
		}
		p.Ops = append(p.Ops, o)
	}
	return &p
}
