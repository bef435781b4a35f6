package sut

// GoQueueOf is the queue d defines, as Registered returns it, without registering d: a test's
// Go queue stays out of every other test's list of queues.
func GoQueueOf(d GoDef) *Queue { return d.queue() }
