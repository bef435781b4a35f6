package model

// Can is what a queue ships beyond the contract's core, made once from its declaration (a
// folder's optional files, the interfaces a Go queue implements: sut.Declared) and read by the
// model, the world operations run in, the generators and the readers. An operation kind says
// what it needs as a predicate on it; the model judges the properties that speak of what the
// queue ships (Shape.NotJudged).
type Can struct {
	Lock   bool `json:"lock,omitempty"`   // lock.sql: another session can row-lock a job
	Rescue bool `json:"rescue,omitempty"` // rescue.sql: a rescue step makes expired jobs ready
	// Fail: fail.sql, a job's owner reports a failure; jobs can then be dead, and the snapshot
	// reports each job's attempts and the error text its last failure kept.
	Fail bool `json:"fail,omitempty"`
	// Renew and Heartbeat: renew.sql, presenting a claim's token, or (where leases are the
	// worker's, Lifecycle.WorkerLease) naming the worker, whose heartbeat extends every live
	// lease it holds.
	Renew     bool `json:"renew,omitempty"`
	Heartbeat bool `json:"heartbeat,omitempty"`
	Delay     bool `json:"delay,omitempty"`  // enqueue.sql takes a run-at delay
	Effect    bool `json:"effect,omitempty"` // effect.sql with effects.sql: business effects beside completions
	Cancel    bool `json:"cancel,omitempty"` // cancel.sql: a job is cancelled from outside
	Snooze    bool `json:"snooze,omitempty"` // snooze.sql: the owner puts its job back to wait
	Unique    bool `json:"unique,omitempty"` // enqueue_unique.sql: an enqueue by a key no two live jobs share
	// External: the run calls a destination with each job's effect (effectdest), which is the
	// run's, not the queue's.
	External bool `json:"external,omitempty"`
}

// Renews reports whether the queue renews leases at all, per claim or by worker.
func (c Can) Renews() bool { return c.Renew || c.Heartbeat }
