package stress

import (
	"math/rand/v2"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/program"
)

// rescuer is the queue's rescue step run as an actor of its own, on a session of its own,
// racing the workers' claims and completions, as a queue's leader process runs its rescuer
// beside the workers (River's issue 1302 was such a race: the rescuer overwrote a job that
// completed after the rescuer had read it).
type rescuer struct {
	*actor
	rng *rand.Rand
}

// RescueEvery bounds the rescuer's pause between two runs of its step, drawn uniformly up to it:
// often enough that runs land beside completions and claims of expired jobs.
const RescueEvery = 20 * time.Millisecond

func (r *run) rescue(resc *rescuer) {
	for !r.stopped() {
		time.Sleep(time.Duration(resc.rng.Int64N(int64(RescueEvery))))
		resc.one(r.ctx, program.Rescue{S: resc.client.Name})
	}
}
