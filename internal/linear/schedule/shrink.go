package schedule

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/pgqcheck/pgqcheck/internal/verdict"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// The labels of the choices that ShrinkInput reads: how many prefix operations, whose each
// is, and each session's suffix length.
const (
	labelPrefixCount   = "prefix"
	labelPrefixSession = "prefix session"
	labelSuffix        = "suffix"
)

func opLabel(session int) string { return fmt.Sprintf("op s%d", session) }

// argLabels are the choices that belong to the operation drawn just before them.
var argLabels = map[string]bool{"prefix op": true, "back": true, "expire by id": true, "job": true, "rollback": true, "complete in txn": true,
	"real time": true, "lease": true, "margin": true, "after": true, "pause": true, "wait": true, "hold": true,
	"proxy fault": true, "hit": true, "fault at": true}

// ShrinkInput makes a failing FuzzScheduled input smaller, keeping only changes after which the
// run still breaks the same property. It first removes whole operations (an operation's
// choices, with the count that asked for it lowered), then works byte by byte: each byte
// dropped, else lowered (to 0, to half, by one). Every choice's plain value is its lowest, so
// lower bytes mean fewer sessions, operations and faults. It finishes what rapid's shrinker
// leaves when its time runs out.
//
// It returns the smallest failing run, its Input as the run recorded it, and leaves that run's
// report folder; nil when data does not fail.
func ShrinkInput(ctx context.Context, in *sut.Installed, name string, cfg Config, data []byte) *verdict.Finding {
	s := NewScheduler(ctx, in, cfg)
	defer s.Close()
	type run struct {
		f     *verdict.Finding
		marks []mark
	}
	replay := func(d []byte) *run {
		f, _ := s.replayInput(name, d)
		if f == nil {
			return nil
		}
		return &run{f, s.lastMarks}
	}
	property := func(r *run) model.Property {
		if r == nil {
			return -1
		}
		return r.f.Property()
	}
	cur := replay(data)
	want := property(cur)
	if want < 0 {
		return nil
	}
	// Only strictly smaller inputs are taken, so that shrinking ends: a dropped byte can come
	// back as a recorded choice.
	accept := func(d []byte) bool {
		r := replay(d)
		if property(r) != want || !smaller(canonical(r.f.FuzzInput), canonical(cur.f.FuzzInput)) {
			return false
		}
		cur = r
		return true
	}
	for changed := true; changed && ctx.Err() == nil; {
		changed = false
		for _, d := range opRemovals(cur.f.FuzzInput, cur.marks) {
			if changed = accept(d); changed {
				break
			}
		}
		if changed {
			continue
		}
		for i := 0; i < len(canonical(cur.f.FuzzInput)) && ctx.Err() == nil; i++ {
			data := canonical(cur.f.FuzzInput)
			if accept(append(append([]byte(nil), data[:i]...), data[i+1:]...)) {
				changed = true
				i--
				continue
			}
			for _, b := range []byte{0, data[i] / 2, data[i] - 1} {
				if b >= data[i] {
					continue
				}
				lower := append([]byte(nil), data...)
				lower[i] = b
				if accept(lower) {
					changed = true
					break
				}
			}
		}
	}
	// Candidates tried after the smallest run rewrote the report folder: run it once more.
	if last := replay(canonical(cur.f.FuzzInput)); property(last) == want {
		cur = last
	}
	cur.f.FuzzInput = canonical(cur.f.FuzzInput)
	return cur.f
}

// canonical drops trailing zero bytes: past the end of an input every choice is its lowest,
// as it is for a zero byte.
func canonical(b []byte) []byte { return bytes.TrimRight(b, "\x00") }

// smaller orders inputs by length, then bytes.
func smaller(a, b []byte) bool {
	return len(a) < len(b) || (len(a) == len(b) && bytes.Compare(a, b) < 0)
}

// opGroup is the bytes of one operation's choices: a prefix operation (session -1) or an
// operation of a session's suffix.
type opGroup struct {
	session    int
	start, end int
}

// opRemovals lists inputs that each remove one operation from data's program: its choices
// are cut and the count that asked for it (prefix length, suffix length) is lowered by one.
func opRemovals(data []byte, marks []mark) [][]byte {
	var (
		groups   []opGroup
		open     = -1 // index of the group being extended, -1 when none
		prefixAt = -1 // the prefix count's mark
		suffixAt []int
	)
	for i, m := range marks {
		if open >= 0 && !argLabels[m.label] {
			groups[open].end, open = m.off, -1
		}
		switch {
		case m.label == labelPrefixCount:
			prefixAt = i
		case m.label == labelSuffix:
			suffixAt = append(suffixAt, i)
		case m.label == labelPrefixSession:
			groups, open = append(groups, opGroup{session: -1, start: m.off}), len(groups)
		case strings.HasPrefix(m.label, "op s"):
			var s int
			fmt.Sscanf(m.label, "op s%d", &s)
			groups, open = append(groups, opGroup{session: s, start: m.off}), len(groups)
		}
	}
	if open >= 0 {
		groups[open].end = len(data)
	}
	var out [][]byte
	remove := func(count mark, g opGroup) {
		if count.u == 0 || count.off >= g.start || g.end > len(data) {
			return
		}
		d := append(append([]byte(nil), data[:g.start]...), data[g.end:]...)
		d[count.off]--
		out = append(out, d)
	}
	for _, g := range groups {
		switch {
		case g.session < 0 && prefixAt >= 0:
			remove(marks[prefixAt], g)
		case g.session >= 0 && g.session < len(suffixAt):
			remove(marks[suffixAt[g.session]], g)
		}
	}
	return out
}
