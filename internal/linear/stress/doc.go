// Package stress is stress mode: free-running traffic against an installed queue, for a
// bounded time, from many sessions at once. Workers claim, pause, complete and crash; an
// enqueuer keeps a backlog; a rescuer runs the queue's rescue step beside them; a chaos
// goroutine expires leases, holds row locks open, cancels statements, terminates backends and
// arms the fault proxy on workers' connections; crash rounds kill the server and restart it.
// Every actor runs the program package's operations through a recording client (package
// record). Run ends by draining the queue and checking the whole history (package check), and
// writes a report folder (package report) when it fails. It finds races by volume; it does
// not replay.
package stress
