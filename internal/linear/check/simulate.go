package check

import (
	"fmt"
	"math/rand/v2"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/model"
)

// SimConfig shapes a simulated run.
type SimConfig struct {
	Ops     int     // operations to generate
	Workers int     // concurrent workers (default 8)
	Unknown float64 // share of operations whose outcome is lost (default 0.002)
	Seed    uint64
}

// Simulate generates the history of a simulated concurrent run against the specification: a
// correct queue, workers that claim, complete (sometimes with an older token) and crash, an
// enqueuer, and a chaos client that expires leases and observes jobs. Every operation takes
// effect at one instant inside its interval, and instants increase, so the history is
// linearizable by construction; intervals overlap freely, so the checker has real work to do.
// An operation whose outcome is lost returns at +infinity and took effect or not (a coin).
// It exists to benchmark the checker and to test it on long legal histories.
func Simulate(cfg SimConfig) *history.History {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Unknown == 0 {
		cfg.Unknown = 0.002
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	rec := history.NewRecorder(true)
	var clients []*simClient
	add := func(name string) {
		clients = append(clients, &simClient{name: name, id: rec.NewClient(), busy: -1})
	}
	add("enqueuer")
	add("chaos")
	for i := 0; i < cfg.Workers; i++ {
		add(fmt.Sprintf("w%d", i))
	}
	s := &simulation{rng: rng, jobs: map[int64]*model.JobState{}, live: map[int64]bool{}, next: 1}
	var ops []history.Op
	t := int64(1000)
	for len(ops) < cfg.Ops {
		t += 1 + int64(rng.IntN(20))
		c := clients[rng.IntN(len(clients))]
		if c.busy >= t {
			continue
		}
		call := max(c.busy+1, t-int64(rng.IntN(60)))
		ret := t + 1 + int64(rng.IntN(60))
		lost := rng.Float64() < cfg.Unknown
		apply := !lost || rng.IntN(2) == 0
		in, out, lost, issued := s.step(c, lost, apply)
		if !issued {
			continue
		}
		if lost {
			out = model.Output{Outcome: model.Unknown}
			ret = history.Never
		}
		ops = append(ops, history.Op{Client: c.id, Session: c.name, Input: in, Output: out, Call: call, Return: ret})
		c.busy = ret
		if lost {
			c.id, c.busy = rec.NewClient(), t
		}
	}
	return &history.History{Version: history.Version, Queue: "simulated", Mode: "simulated", Clock: "logical", Ops: ops}
}

// simClient is one simulated session.
type simClient struct {
	name   string
	id     int
	busy   int64 // its previous operation's return
	tokens []program.Token
}

// simulation is the state of the simulated queue: every job, and which can be claimed.
type simulation struct {
	rng      *rand.Rand
	jobs     map[int64]*model.JobState
	live     map[int64]bool // running with a lease that outlives the run: simulated histories carry no times
	eligible []int64        // ready or expired, in no particular order
	running  []int64
	next     int64 // the next job's id
}

// step is the operation c issues now, taking effect when apply, and whether its outcome is
// lost (an observation never is); issued is false when c issues none this time.
func (s *simulation) step(c *simClient, lost, apply bool) (in model.Input, out model.Output, _, issued bool) {
	switch {
	case c.name == "enqueuer":
		in, out, issued = s.enqueue(apply)
	case c.name == "chaos":
		in, out, lost, issued = s.chaos(lost, apply)
	case len(c.tokens) > 0 && s.rng.IntN(10) < 7:
		in, out, issued = s.complete(c, apply)
	default:
		in, out = s.claim(c, lost, apply)
		issued = true
	}
	return in, out, lost, issued
}

func (s *simulation) enqueue(apply bool) (model.Input, model.Output, bool) {
	if len(s.eligible) > 12 {
		return model.Input{}, model.Output{}, false
	}
	in := model.Input{Kind: model.OpEnqueue, Payload: "{}"}
	var out model.Output
	if apply {
		id := s.next
		s.next++
		s.jobs[id] = &model.JobState{Exists: true, State: model.Ready}
		s.eligible = append(s.eligible, id)
		out = model.Output{Job: id}
	}
	return in, out, true
}

// chaos expires a running job's lease, or now and then observes it.
func (s *simulation) chaos(lost, apply bool) (model.Input, model.Output, bool, bool) {
	if len(s.running) == 0 {
		return model.Input{}, model.Output{}, lost, false
	}
	id := s.running[s.rng.IntN(len(s.running))]
	j := s.jobs[id]
	if s.rng.IntN(8) == 0 {
		in := model.Input{Kind: model.OpObserve, Job: id}
		return in, model.Output{Found: true, State: j.State, Gen: j.Gen, Live: s.live[id]}, false, true
	}
	in := model.Input{Kind: model.OpExpire, Job: id}
	if apply && s.live[id] {
		s.live[id] = false
		j.Until = model.At(-model.ExpireBy)
		s.running = remove(s.running, id)
		s.eligible = append(s.eligible, id)
	}
	return in, model.Output{}, lost, true
}

// complete presents c's newest token, or now and then an older one; or c crashes and
// presents none.
func (s *simulation) complete(c *simClient, apply bool) (model.Input, model.Output, bool) {
	tk := c.tokens[len(c.tokens)-1]
	if len(c.tokens) > 1 && s.rng.IntN(10) == 0 {
		tk = c.tokens[s.rng.IntN(len(c.tokens)-1)]
	}
	c.tokens = c.tokens[:0]
	if s.rng.IntN(20) == 0 { // a crash: the token is dropped, not presented
		return model.Input{}, model.Output{}, false
	}
	j := s.jobs[tk.ID]
	in := model.Input{Kind: model.OpComplete, Job: tk.ID, Gen: tk.Gen}
	var out model.Output
	ok := j.State == model.Running && j.Gen == tk.Gen && s.live[tk.ID]
	if ok {
		out.Rows = 1
	}
	if ok && apply {
		*j = model.JobState{Exists: true, State: model.Done, Gen: j.Gen}
		s.running = remove(s.running, tk.ID)
	}
	return in, out, true
}

func (s *simulation) claim(c *simClient, lost, apply bool) (model.Input, model.Output) {
	in := model.Input{Kind: model.OpClaim}
	if len(s.eligible) == 0 || s.rng.IntN(50) == 0 { // an empty answer is always legal
		return in, model.Output{}
	}
	i := s.rng.IntN(len(s.eligible))
	id := s.eligible[i]
	j := s.jobs[id]
	out := model.Output{Found: true, Job: id, Gen: j.Gen + 1}
	if apply {
		s.eligible = remove(s.eligible, id)
		s.running = append(s.running, id)
		*j = model.JobState{Exists: true, State: model.Running, Gen: j.Gen + 1, Until: model.Window{From: model.Never, To: model.Never}}
		s.live[id] = true
		if !lost {
			c.tokens = append(c.tokens, program.Token{ID: id, Gen: j.Gen})
		}
	}
	return in, out
}

// remove drops id from list, not keeping the order.
func remove(list []int64, id int64) []int64 {
	for i, x := range list {
		if x == id {
			list[i] = list[len(list)-1]
			return list[:len(list)-1]
		}
	}
	return list
}
