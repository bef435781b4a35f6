package schedule

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
)

var updateDecoded = flag.Bool("update-decoded", false, "rewrite testdata/decoded from the FuzzScheduled corpus")

// TestScheduledCorpusDecodesAsBefore: every FuzzScheduled corpus entry draws the program it drew
// when it was saved. The drawing order here is fixed (the prefix, then each session's suffix in
// turn), not the scheduler's, and the interleaving's own choices are left out; what it pins is
// the meaning of the bytes: which kinds, sessions, leases and pauses they stand for, on a queue
// with and without lock.sql and rescue.sql.
func TestScheduledCorpusDecodesAsBefore(t *testing.T) {
	dir := suttest.ModuleDir(t, filepath.Join("fuzz", "testdata", "fuzz", "FuzzScheduled"))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{}
	var names []string
	for _, e := range entries {
		data, err := readCorpusFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		inputs[e.Name()], names = data, append(names, e.Name())
	}
	// Inputs from a fixed generator reach the kinds no corpus entry draws.
	for i, data := range arbitraryInputs(40, 96) {
		name := fmt.Sprintf("arbitrary-%02d", i)
		inputs[name], names = data, append(names, name)
	}
	var b strings.Builder
	for _, name := range names {
		data := inputs[name]
		for _, can := range []model.Can{{Lock: true, Rescue: true}, {}} {
			c := &byteChoices{data: data}
			p := drawProgram(c, Config{Sessions: 3, MaxPrefix: 5, MaxSuffix: 5}, can)
			fmt.Fprintf(&b, "%s (lock %t, rescue %t):\n", name, can.Lock, can.Rescue)
			for _, op := range p.prefix {
				b.WriteString("  " + op.String() + "\n")
			}
			for s, n := range p.suffixLengths {
				for range n {
					for _, op := range p.next(c, s) {
						b.WriteString("  | " + op.String() + "\n")
					}
				}
			}
		}
	}
	path := suttest.ModuleDir(t, filepath.Join("fuzz", "testdata", "decoded", "FuzzScheduled.golden"))
	got := b.String()
	if *updateDecoded {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run DecodesAsBefore -update-decoded writes it)", err)
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range min(len(gl), len(wl)) {
		if gl[i] != wl[i] {
			t.Fatalf("%s: line %d decodes as %q, was %q", path, i+1, gl[i], wl[i])
		}
	}
	if len(gl) != len(wl) {
		t.Fatalf("%s: %d lines decoded, %d before", path, len(gl), len(wl))
	}
}

// readCorpusFile reads a corpus file of one []byte (go test fuzz v1).
func readCorpusFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	q, ok := strings.CutPrefix(lines[len(lines)-1], "[]byte(")
	q, ok2 := strings.CutSuffix(q, ")")
	data, err := strconv.Unquote(q)
	if len(lines) != 2 || !ok || !ok2 || err != nil {
		return nil, fmt.Errorf("%s: not a corpus file of one []byte", path)
	}
	return []byte(data), nil
}

// arbitraryInputs returns n inputs of size bytes from a fixed xorshift generator: the same bytes
// on every machine and Go version.
func arbitraryInputs(n, size int) [][]byte {
	x := uint64(0x9e3779b97f4a7c15)
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, size)
		for j := range out[i] {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			out[i][j] = byte(x)
		}
	}
	return out
}
