package program

// Mode names how a finding was searched for.
type Mode string

const (
	Sequential Mode = "sequential" // the Prop state machine: one operation at a time, the model beside the queue
	Scheduled  Mode = "scheduled"  // concurrent sessions under a drawn interleaving, checked with porcupine
	Stress     Mode = "stress"     // free-running concurrent traffic with faults, checked with porcupine
)
