package main

import (
	"context"
	"sort"
	"strings"

	"pgqcheck/model"
	"pgqcheck/sut"
)

// allModes is the default campaign: every mode in turn, so one run covers what the sequential
// properties see and what only concurrency shows.
const allModes = "all"

// mixed takes turns between modes: a worker's round n is round n/k of mode n%k, all on the
// worker's one database (each round starts by emptying the queue).
type mixed struct{ modes []Mode }

// lookupModes reads --mode: one mode, a comma-separated list, or "all".
func lookupModes(cmd, spec string) (Mode, error) {
	if spec == allModes {
		spec = strings.Join([]string{"sequential", "stress", "scheduled"}, ",")
	}
	names := strings.Split(spec, ",")
	if len(names) == 1 {
		return lookupMode(cmd, names[0])
	}
	m := mixed{}
	for _, n := range names {
		one, err := lookupMode(cmd, strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		m.modes = append(m.modes, one)
	}
	return m, nil
}

func (m mixed) Name() string {
	var names []string
	for _, one := range m.modes {
		names = append(names, one.Name())
	}
	return strings.Join(names, "+")
}

func (m mixed) Properties() []model.Property {
	seen := map[model.Property]bool{}
	var out []model.Property
	for _, one := range m.modes {
		for _, p := range one.Properties() {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m mixed) Usable(q *sut.Queue) error {
	for _, one := range m.modes {
		if p, ok := one.(Prober); ok {
			if err := p.Usable(q); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m mixed) Start(ctx context.Context, w *Worker) (Hunter, error) {
	h := &mixedHunter{}
	for _, one := range m.modes {
		sub, err := one.Start(ctx, w)
		if err != nil {
			h.Close()
			return nil, err
		}
		h.hunters = append(h.hunters, sub)
	}
	return h, nil
}

type mixedHunter struct{ hunters []Hunter }

func (h *mixedHunter) Round(ctx context.Context, n int) ([]*Failure, error) {
	k := len(h.hunters)
	return h.hunters[n%k].Round(ctx, n/k)
}

func (h *mixedHunter) ReplaySaved(ctx context.Context) ([]*Failure, error) {
	var out []*Failure
	for _, sub := range h.hunters {
		if r, ok := sub.(Replayer); ok {
			fs, err := r.ReplaySaved(ctx)
			out = append(out, fs...)
			if err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

func (h *mixedHunter) Close() {
	for _, sub := range h.hunters {
		sub.Close()
	}
}
