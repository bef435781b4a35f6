package program

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/sut"
)

// examples holds at least one operation for every line the grammar reads.
var examples = []Op{
	Enqueue{N: 3}, Enqueue{S: "s1", N: 1}, Claim{S: "w1"}, Claim{S: "s0", Lease: 1500 * time.Millisecond},
	Complete{S: "w2"}, Complete{S: "w0", Back: 2}, Expire{Job: 7}, Expire{S: "s2", Job: 3},
	ExpireClaim{S: "s1"}, ExpireClaim{S: "s0", Back: 2}, Pause{W: "w1"}, Snapshot{}, Snapshot{S: "s2"},
	Begin{S: "s1"}, Lock{S: "locker1", Job: 4}, Commit{S: "locker0"}, Rollback{S: "s2"},
	Interrupt{S: "locker0"}, Terminate{S: "s1"}, Crash{W: "w0"}, Drain{S: "w2"}, Rescue{S: "s1"}, Rescue{},
	Overslept{W: "w2"}, Replaced{W: "w0", By: "w2"}, ShortLease{W: "w1"}, ShortLease{W: "w0", Late: true},
	ClaimTxn{S: "s1"}, ClaimTxn{S: "s1", Commit: true}, ClaimTxn{S: "s2", Complete: true}, ClaimTxn{S: "s0", Complete: true, Commit: true},
	ClaimTxn{S: "w1", Wait: 300 * time.Millisecond, Lease: 250 * time.Millisecond, Hold: 600 * time.Millisecond, Complete: true, Commit: true},
	ClaimTxn{S: "w0", Hold: 100 * time.Millisecond},
	LockTxn{S: "s1", Job: 2}, LockTxn{S: "s2", Job: 1, Commit: true},
	Sleep{D: 300 * time.Millisecond}, Near{W: "w0", Margin: 50 * time.Millisecond}, Near{W: "w2", Margin: 1500 * time.Millisecond, After: true},
	Near{W: "s1", Tight: true}, Near{W: "w2", Tight: true, After: true}, RescueTxn{S: "s2", Edge: "s0"},
	ClaimTxn{S: "s1", WaitEdge: "s0", Complete: true, Commit: true}, ClaimTxn{S: "w1", Lease: 100 * time.Millisecond, HoldEdge: true, Complete: true, Commit: true},
}

// Every operation must read back from the line it prints: saved programs are those lines.
func TestOpsRoundTrip(t *testing.T) {
	for _, op := range examples {
		got, err := ParseOp(op.String())
		if err != nil || !reflect.DeepEqual(got, op) {
			t.Errorf("%q read back as %#v (%v), want %#v", op, got, err, op)
		}
	}
	p := &Program{Header: map[string]string{"verdict": "property 1 (fencing): x", HeaderMode: string(Scheduled), HeaderSessions: "3"},
		Ops: []Op{Enqueue{S: "s0", N: 1}, ClaimTxn{S: "s2", Complete: true}, Interrupt{S: "s1"}}}
	got, err := Parse(p.Format())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Ops, p.Ops) || got.Header["verdict"] != p.Header["verdict"] || got.Mode() != Scheduled {
		t.Fatalf("round trip changed the program:\n%s\nvs\n%s", p.Format(), got.Format())
	}
	// Every rule of the grammar is exercised by some example, so none can drift unseen.
	for _, g := range grammar {
		seen := false
		for _, op := range examples {
			line := op.String()
			if m := sessionWord.FindStringSubmatch(line); m != nil && g.re.MatchString(m[2]) || g.re.MatchString(line) {
				seen = true
			}
		}
		if !seen {
			t.Errorf("no example prints as %q", g.format)
		}
	}
}

// A line that is not exactly what an operation prints is refused, with what it may have meant.
func TestParseRefuses(t *testing.T) {
	for _, line := range []string{"w0 fly", "w0 claim 2s lease, complete at once", "w0 pause past lease, w1 claim, w2 complete"} {
		if op, err := ParseOp(line); err == nil {
			t.Errorf("%q parsed as %v", line, op)
		}
	}
	_, err := ParseOp("w0 claim 2s lease, complete at once")
	if err == nil || !strings.Contains(err.Error(), ShortLease{W: "w0"}.String()) {
		t.Errorf("the error does not say what the suite prints: %v", err)
	}
	if _, err := Parse("# mode: chaotic\nw0 claim\n"); err == nil {
		t.Error("an unknown mode parsed")
	}
	// A line on a session its program's world lacks would never run: refused up front.
	for _, text := range []string{"enqueue 1\ns1 claim\n", "# mode: scheduled\nw0 claim\n",
		"# mode: scheduled\n# sessions: 2\ns2 claim\n", "# mode: scheduled\n# sessions: 9\ns0 claim\n"} {
		if _, err := Parse(text); err == nil || !strings.Contains(err.Error(), "session") {
			t.Errorf("%q parsed (%v)", text, err)
		}
	}
	if _, err := Parse("# mode: scheduled\n# sessions: 3\ns2 claim\nenqueue 1\n"); err != nil {
		t.Errorf("a scheduled program on its own sessions was refused: %v", err)
	}
}

// TestClaimsAlone: a queue that declares its claims run alone gets no claim drawn inside a
// transaction.
func TestClaimsAlone(t *testing.T) {
	w := NewWorld(sut.MustBuiltin(sut.DefaultQueue), WorkerName(0), WorkerName(1))
	txn := ClaimTxn{S: WorkerName(1), Commit: true}
	if !txn.Applicable(w) {
		t.Fatal("a claim transaction does not apply to the seed's queue")
	}
	w.ClaimsOutsideTxns = true
	if txn.Applicable(w) {
		t.Error("a claim transaction applies to a queue whose claims run alone")
	}
	// Nor a plain claim on a session whose transaction is open (a scheduled program's begin).
	s := w.Session(WorkerName(1))
	claim := Claim{S: s.Name}
	if !claim.Applicable(w) {
		t.Fatal("a claim outside any transaction does not apply")
	}
	s.InTxn = true
	if claim.Applicable(w) {
		t.Error("a claim inside an open transaction applies to a queue whose claims run alone")
	}
	w.ClaimsOutsideTxns = false
	if !claim.Applicable(w) {
		t.Error("a claim inside an open transaction does not apply to the seed's queue")
	}
}

// TestWorkAlone: a queue that declares its work runs on connections of its own gets no
// enqueue, claim or completion drawn inside a transaction; the seed's queue does.
func TestWorkAlone(t *testing.T) {
	q := sut.MustBuiltin(sut.DefaultQueue)
	name := WorkerName(1)
	inTxn := func(w *World) []Op {
		w.Sessions[1].InTxn = true
		var applies []Op
		for _, op := range []Op{Enqueue{S: name, N: 1}, Claim{S: name}, Complete{S: name}} {
			if op.Applicable(w) {
				applies = append(applies, op)
			}
		}
		return applies
	}
	held := func(w *World) *World {
		w.Sessions[1].Tokens = append(w.Sessions[1].Tokens, Token{ID: 1, Gen: 1})
		w.Jobs = []int64{1}
		return w
	}
	if got := inTxn(held(NewWorld(q, WorkerName(0), name))); len(got) != 3 {
		t.Fatalf("inside a transaction on the seed's queue only %v apply; want an enqueue, a claim and a completion", got)
	}
	alone := *q
	alone.OwnsTransactions = true
	if got := inTxn(held(NewWorld(&alone, WorkerName(0), name))); len(got) != 0 {
		t.Errorf("inside a transaction on a queue whose work runs alone %v apply", got)
	}
}
