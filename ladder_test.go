package pgqcheck_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// The resolution ladder: mutant families of the suite's own, each reading a lease a little
// wrong. A claim treats a live lease as over early, a completion accepts one late, a rescue
// takes one early, each by 200, 50, 20 and 5 ms; and each of the three predicates compares the
// lease with now(), the transaction's start, instead of the clock. The 20 ms rungs and the now()
// ones are in testdata/mutants, where the kill table demands them.
type rung struct {
	name, base, file, from, to string
}

func ladder() []rung {
	var out []rung
	for _, ms := range []int{200, 50, 20, 5} {
		out = append(out,
			rung{fmt.Sprintf("claim-early-%dms", ms), "seed", sut.FileClaim, "lease_until<clock_timestamp())",
				fmt.Sprintf("lease_until<clock_timestamp()+interval '%d milliseconds')", ms)},
			rung{fmt.Sprintf("complete-late-%dms", ms), "seed", sut.FileComplete, "lease_until>clock_timestamp()",
				fmt.Sprintf("lease_until>clock_timestamp()-interval '%d milliseconds'", ms)},
			rung{fmt.Sprintf("rescue-early-%dms", ms), "rescued", sut.FileRescue, "attempted_at < clock_timestamp() - interval '1 second'",
				fmt.Sprintf("attempted_at < clock_timestamp() - interval '1 second' + interval '%d milliseconds'", ms)})
	}
	return append(out,
		rung{"claim-predicate-now", "seed", sut.FileClaim, "lease_until<clock_timestamp())", "lease_until<now())"},
		rung{"complete-predicate-now", "seed", sut.FileComplete, "lease_until>clock_timestamp()", "lease_until>now()"},
		rung{"rescue-predicate-now", "rescued", sut.FileRescue, "attempted_at < clock_timestamp() - interval '1 second'", "attempted_at < now() - interval '1 second'"})
}

// write makes the rung's queue folder under dir: its base queue with one predicate changed.
func (r rung) write(tb testing.TB, dir string) *mutant.Mutant {
	tb.Helper()
	var files map[string]string
	if r.base == "seed" {
		q := sut.MustBuiltin(sut.DefaultQueue)
		files = map[string]string{sut.FileSchema: q.Schema, sut.FileEnqueue: q.Enqueue, sut.FileClaim: q.Claim,
			sut.FileComplete: q.Complete, sut.FileExpire: q.Expire, sut.FileSnapshot: q.Snapshot, sut.FileLock: q.Lock}
	} else {
		files = map[string]string{}
		src := filepath.Join("testdata", "queues", r.base)
		entries, err := os.ReadDir(src)
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				tb.Fatal(err)
			}
			files[e.Name()] = string(b)
		}
	}
	if !strings.Contains(files[r.file], r.from) {
		tb.Fatalf("%s: %s of %s has no %q", r.name, r.file, r.base, r.from)
	}
	files[r.file] = strings.Replace(files[r.file], r.from, r.to, 1)
	path := filepath.Join(dir, r.name)
	if err := os.MkdirAll(path, 0o755); err != nil {
		tb.Fatal(err)
	}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(path, f), []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	q, err := sut.LoadDir(path)
	if err != nil {
		tb.Fatal(err)
	}
	return &mutant.Mutant{Name: r.name, Dir: path, Bug: r.name, Expect: []string{"Prop", "PropLeaseTime", "Linear"}, Queue: q}
}

// TestLadderInKillTable: the ladder's 20 ms rungs and its now() rungs are the mutants of
// testdata/mutants of the same names, each the same one-predicate change of its base queue.
func TestLadderInKillTable(t *testing.T) {
	dir := t.TempDir()
	for _, r := range ladder() {
		if !strings.Contains(r.name, "-20ms") && !strings.Contains(r.name, "-now") {
			continue
		}
		want := r.write(t, dir).Queue
		got, err := sut.LoadDir(filepath.Join("testdata", "mutants", r.name))
		if err != nil {
			t.Errorf("%s is not in testdata/mutants: %v", r.name, err)
			continue
		}
		if got.Schema != want.Schema || got.Claim != want.Claim || got.Complete != want.Complete || got.Rescue != want.Rescue {
			t.Errorf("testdata/mutants/%s is not the ladder's %s of %s", r.name, r.file, r.base)
		}
	}
}

// BenchmarkResolutionLadder hunts every rung as the kill table does (each mode a minute at most)
// with five seeds, and prints whether the search caught it with each seed and the median time
// to its first catch:
//
//	go test -run '^$' -bench ResolutionLadder -benchtime 1x .
func BenchmarkResolutionLadder(b *testing.B) {
	srv, err := pgserver.Shared(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var ms []*mutant.Mutant
	for _, r := range ladder() {
		ms = append(ms, r.write(b, dir))
	}
	const seeds = 5
	for range b.N {
		catches := map[string][]time.Duration{}
		for seed := uint64(1); seed <= seeds; seed++ {
			kt, err := campaign.HuntMutants(context.Background(), campaign.KillConfig{Server: srv, Mutants: ms, Budget: time.Minute, Seed: seed})
			if err != nil {
				b.Fatal(err)
			}
			first := map[string]time.Duration{}
			for _, row := range kt.Rows {
				if t, ok := first[row.Mutant]; row.Caught && (!ok || row.Time < t) {
					first[row.Mutant] = row.Time
				}
			}
			for m, t := range first {
				catches[m] = append(catches[m], t)
			}
		}
		var table strings.Builder
		fmt.Fprintf(&table, "| mutant | caught (of %d seeds) | median time to the first catch |\n|---|---:|---:|\n", seeds)
		for _, m := range ms {
			ts := catches[m.Name]
			median := "-"
			if len(ts) > 0 {
				sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
				median = ts[len(ts)/2].Round(10 * time.Millisecond).String()
			}
			fmt.Fprintf(&table, "| %s | %d | %s |\n", m.Name, len(ts), median)
		}
		b.Logf("resolution ladder:\n%s", table.String())
		if i := slices.IndexFunc(ms, func(m *mutant.Mutant) bool { return len(catches[m.Name]) == 0 }); i >= 0 {
			b.Logf("%s was caught with no seed", ms[i].Name)
		}
	}
}
