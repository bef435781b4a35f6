package fuzz_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/fuzz"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/sut"
)

var updateDecoded = flag.Bool("update-decoded", false, "rewrite testdata/decoded from the corpora")

// TestCorpusDecodesAsBefore: every FuzzQueue corpus entry decodes into the operations it
// decoded into when it was saved, resolved against a world with three jobs. A change of the
// encoding or of the generator's configuration that would give an old input another meaning
// fails here.
func TestCorpusDecodesAsBefore(t *testing.T) {
	entries, err := os.ReadDir(fuzz.CorpusDir)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{}
	var names []string
	for _, e := range entries {
		data, err := fuzz.ReadInputFile(filepath.Join(fuzz.CorpusDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		inputs[e.Name()], names = data, append(names, e.Name())
	}
	// Inputs from a fixed generator reach the kinds and arguments no corpus entry holds.
	x := uint64(0x9e3779b97f4a7c15)
	for i := range 20 {
		data := make([]byte, 2*fuzz.MaxSteps)
		for j := range data {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			data[j] = byte(x)
		}
		name := fmt.Sprintf("arbitrary-%02d", i)
		inputs[name], names = data, append(names, name)
	}
	var b strings.Builder
	for _, name := range names {
		data := inputs[name]
		w := program.NewWorld(sut.MustBuiltin(sut.DefaultQueue), program.Reader)
		w.Jobs = []int64{1, 2, 3}
		b.WriteString(name + ":\n")
		for _, s := range fuzz.Decode(data) {
			ops, ok := s.Ops(w)
			if !ok {
				b.WriteString("  (no job)\n")
				continue
			}
			for i, op := range ops {
				if i > 0 {
					b.WriteString("  +")
				} else {
					b.WriteString("  ")
				}
				b.WriteString(op.String() + "\n")
			}
		}
	}
	compareGolden(t, filepath.Join("testdata", "decoded", "FuzzQueue.golden"), b.String())
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
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
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s: line %d decodes as %q, was %q", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s: %d lines decoded, %d before", path, len(gl), len(wl))
	}
}
