package protocol

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Log is a Go worker's side of the protocol: it appends events to the events file, each with
// one write, so that handlers running side by side never interleave a line and a worker killed
// mid-write leaves at most its last line short.
type Log struct {
	f   *os.File
	pid int
	mu  sync.Mutex
	seq atomic.Int64
	// floor is the latest database time the worker read: a statement sent later ran no earlier.
	floor atomic.Int64
}

// Open opens the events file of a worker named worker and writes its hello.
func Open(c Config, runs string) (*Log, error) {
	f, err := os.OpenFile(c.Events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck worker: events file: %v", err)
	}
	l := &Log{f: f, pid: os.Getpid()}
	return l, l.write(Event{Ev: EvHello, Worker: c.Worker, Runs: runs})
}

// Close closes the events file.
func (l *Log) Close() error { return l.f.Close() }

func (l *Log) write(e Event) error {
	e.PID = l.pid
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.f.Write(append(b, '\n'))
	return err
}

// Saw notes a database time the worker read (any clock_timestamp() reading): later sends
// carry it as their floor.
func (l *Log) Saw(t time.Time) {
	us := Micros(t)
	for {
		old := l.floor.Load()
		if us <= old || l.floor.CompareAndSwap(old, us) {
			return
		}
	}
}

// Send records that a statement is about to be sent, and returns the number its answer
// must carry.
func (l *Log) Send(op string, job, gen int64) (int64, error) {
	seq := l.seq.Add(1)
	return seq, l.write(Event{Ev: EvSend, Seq: seq, Op: op, Job: job, Gen: gen, Floor: l.floor.Load()})
}

// SendEnqueue records that an enqueue of payload, due delay after it runs, is about to be sent.
func (l *Log) SendEnqueue(payload string, delay time.Duration) (int64, error) {
	seq := l.seq.Add(1)
	return seq, l.write(Event{Ev: EvSend, Seq: seq, Op: OpEnqueue, Payload: payload, DelayMS: delay.Milliseconds(), Floor: l.floor.Load()})
}

// Answer records a statement's answer: e carries what came back; its Ev, Seq and Op are set
// here. Its readings become the floor of later sends.
func (l *Log) Answer(seq int64, op string, e Event) error {
	e.Ev, e.Seq, e.Op = EvAnswer, seq, op
	for _, t := range []int64{e.From, e.To} {
		if t > 0 {
			l.Saw(time.UnixMicro(t))
		}
	}
	return l.write(e)
}

// Start records that a handler began executing attempt gen of job at database time at;
// claimed, where known, is a database time no later than the claim that handed it out.
func (l *Log) Start(job, gen int64, at, claimed time.Time) error {
	l.Saw(at)
	return l.write(Event{Ev: EvStart, Job: job, Gen: gen, At: Micros(at), Claimed: Micros(claimed)})
}

// End records that the handler of attempt gen of job returned at database time at, with
// result (ResultDone, ...).
func (l *Log) End(job, gen int64, at time.Time, result string) error {
	l.Saw(at)
	return l.write(Event{Ev: EvEnd, Job: job, Gen: gen, At: Micros(at), Result: result})
}

// Event writes any other event (an observation, an effects count) as it is.
func (l *Log) Event(e Event) error { return l.write(e) }

// SendID, StartID and EndID are Send, Start and End for a queue whose ids are not numbers.
func (l *Log) SendID(op, id string, gen int64) (int64, error) {
	seq := l.seq.Add(1)
	return seq, l.write(Event{Ev: EvSend, Seq: seq, Op: op, ID: id, Gen: gen, Floor: l.floor.Load()})
}

func (l *Log) StartID(id string, gen int64, at, claimed time.Time) error {
	l.Saw(at)
	return l.write(Event{Ev: EvStart, ID: id, Gen: gen, At: Micros(at), Claimed: Micros(claimed)})
}

func (l *Log) EndID(id string, gen int64, at time.Time, result string) error {
	l.Saw(at)
	return l.write(Event{Ev: EvEnd, ID: id, Gen: gen, At: Micros(at), Result: result})
}

// SendKey, StartKey and EndKey are Send, Start and End for a worker that knows its job by the
// workload's key alone.
func (l *Log) SendKey(op, key string, gen int64) error {
	seq := l.seq.Add(1)
	return l.write(Event{Ev: EvSend, Seq: seq, Op: op, Key: key, Gen: gen, Floor: l.floor.Load()})
}

func (l *Log) StartKey(key string, gen int64, at time.Time) error {
	l.Saw(at)
	return l.write(Event{Ev: EvStart, Key: key, Gen: gen, At: Micros(at)})
}

func (l *Log) EndKey(key string, gen int64, at time.Time, result string) error {
	l.Saw(at)
	return l.write(Event{Ev: EvEnd, Key: key, Gen: gen, At: Micros(at), Result: result})
}
