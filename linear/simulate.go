package linear

import (
	"fmt"
	"math/rand/v2"

	"pgqcheck/model"
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
func Simulate(cfg SimConfig) *History {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Unknown == 0 {
		cfg.Unknown = 0.002
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	rec := NewRecorder(true)
	type client struct {
		name   string
		id     int
		busy   int64 // its previous operation's return
		tokens []token
	}
	var clients []*client
	add := func(name string) {
		clients = append(clients, &client{name: name, id: rec.NewClient(), busy: -1})
	}
	add("enqueuer")
	add("chaos")
	for i := 0; i < cfg.Workers; i++ {
		add(fmt.Sprintf("w%d", i))
	}
	jobs := map[int64]*model.JobState{}
	live := map[int64]bool{} // running with a lease that outlives the run: simulated histories carry no times
	var eligible []int64     // ready or expired, in no particular order
	var running []int64
	remove := func(list []int64, id int64) []int64 {
		for i, x := range list {
			if x == id {
				list[i] = list[len(list)-1]
				return list[:len(list)-1]
			}
		}
		return list
	}
	next := int64(1)
	var ops []Op
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
		var in model.Input
		var out model.Output
		switch {
		case c.name == "enqueuer":
			if len(eligible) > 12 {
				continue
			}
			in = model.Input{Kind: model.OpEnqueue, Payload: "{}"}
			if apply {
				id := next
				next++
				jobs[id] = &model.JobState{Exists: true, State: model.Ready}
				eligible = append(eligible, id)
				out = model.Output{Job: id}
			}
		case c.name == "chaos":
			if len(running) == 0 {
				continue
			}
			id := running[rng.IntN(len(running))]
			j := jobs[id]
			if rng.IntN(8) == 0 {
				in = model.Input{Kind: model.OpObserve, Job: id}
				out = model.Output{Found: true, State: j.State, Gen: j.Gen, Live: live[id]}
				lost, apply = false, true
				break
			}
			in = model.Input{Kind: model.OpExpire, Job: id}
			if apply && live[id] {
				live[id] = false
				j.Until = model.At(-model.ExpireBy)
				running = remove(running, id)
				eligible = append(eligible, id)
			}
		case len(c.tokens) > 0 && rng.IntN(10) < 7:
			tk := c.tokens[len(c.tokens)-1]
			if len(c.tokens) > 1 && rng.IntN(10) == 0 {
				tk = c.tokens[rng.IntN(len(c.tokens)-1)]
			}
			c.tokens = c.tokens[:0]
			if rng.IntN(20) == 0 { // a crash: the token is dropped, not presented
				continue
			}
			j := jobs[tk.ID]
			in = model.Input{Kind: model.OpComplete, Job: tk.ID, Gen: tk.Gen}
			ok := j.State == model.Running && j.Gen == tk.Gen && live[tk.ID]
			if ok {
				out.Rows = 1
			}
			if ok && apply {
				*j = model.JobState{Exists: true, State: model.Done, Gen: j.Gen}
				running = remove(running, tk.ID)
			}
		default:
			in = model.Input{Kind: model.OpClaim}
			if len(eligible) == 0 || rng.IntN(50) == 0 { // an empty answer is always legal
				break
			}
			i := rng.IntN(len(eligible))
			id := eligible[i]
			j := jobs[id]
			out = model.Output{Found: true, Job: id, Gen: j.Gen + 1}
			if apply {
				eligible = remove(eligible, id)
				running = append(running, id)
				*j = model.JobState{Exists: true, State: model.Running, Gen: j.Gen + 1, Until: model.Window{From: model.Never, To: model.Never}}
				live[id] = true
				if !lost {
					c.tokens = append(c.tokens, token{ID: id, Gen: j.Gen})
				}
			}
		}
		if lost {
			out = model.Output{Outcome: model.Unknown}
			ret = Never
		}
		ops = append(ops, Op{Client: c.id, Session: c.name, Input: in, Output: out, Call: call, Return: ret})
		c.busy = ret
		if lost {
			c.id, c.busy = rec.NewClient(), t
		}
	}
	return &History{Version: historyVersion, Queue: "simulated", Mode: "simulated", Clock: "logical", Ops: ops}
}
