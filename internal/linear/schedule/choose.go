package schedule

import (
	"fmt"
	"strconv"

	"pgregory.net/rapid"

	"github.com/pgqcheck/pgqcheck/internal/generate"
)

// chooser makes a scheduled run's choices: the program, the interleaving and the faults. rapid
// draws them under `go test` and campaigns; FuzzScheduled reads them from the fuzzer's bytes.
// Every choice is an integer in [lo, hi], and lo is always the plain one (no fault, the first
// session, the shortest suffix), so both rapid's shrinking and a fuzz input that runs out lead
// toward simpler runs.
//
// Each choice takes one byte of input (two when it spans more than 256 values), and rapid's
// choices are recorded in that encoding: the bytes of a failure rapid found replay it as a fuzz
// input.
type chooser interface {
	generate.Chooser
	// log is every choice so far, encoded as input bytes, and where each one is.
	log() *choiceLog
}

// choiceLog is a run's choices as input bytes, each marked with its label and offset, so that
// ShrinkInput can remove whole operations rather than bytes.
type choiceLog struct {
	bytes []byte
	marks []mark
}

type mark struct {
	label string
	off   int // where the choice's bytes begin
	u     int // the value chosen, less lo: what its bytes hold
}

func (l *choiceLog) add(lo, hi, v int, label string) {
	l.marks = append(l.marks, mark{label, len(l.bytes), v - lo})
	u := v - lo
	for i := 0; i < choiceWidth(lo, hi); i++ {
		l.bytes = append(l.bytes, byte(u>>(8*i)))
	}
}

type rapidChoices struct {
	t   *rapid.T
	rec choiceLog
}

func (c *rapidChoices) Choose(lo, hi int, label string) int {
	v := rapid.IntRange(lo, hi).Draw(c.t, label)
	c.rec.add(lo, hi, v, label)
	return v
}

func (c *rapidChoices) log() *choiceLog { return &c.rec }

// byteChoices reads choices from input bytes; past the end every choice is lo.
type byteChoices struct {
	data []byte
	rec  choiceLog
}

func (c *byteChoices) Choose(lo, hi int, label string) int {
	span := hi - lo + 1
	var u int
	for i := 0; i < choiceWidth(lo, hi); i++ {
		if len(c.data) > 0 {
			u |= int(c.data[0]) << (8 * i)
			c.data = c.data[1:]
		}
	}
	v := lo
	if span > 1 {
		v = lo + u%span
	}
	c.rec.add(lo, hi, v, label)
	return v
}

func (c *byteChoices) log() *choiceLog { return &c.rec }

func choiceWidth(lo, hi int) int {
	if hi-lo < 256 {
		return 1
	}
	return 2
}

func chooseBool(c chooser, label string) bool { return c.Choose(0, 1, label) == 1 }

// CorpusFile is data as a fuzz corpus file, in the format `go test` reads.
func CorpusFile(data []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
}
