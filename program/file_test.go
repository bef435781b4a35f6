package program

import (
	"reflect"
	"testing"
)

// Every operation must read back from the line it prints: saved programs are those lines.
func TestOpsRoundTrip(t *testing.T) {
	ops := []Op{
		Enqueue{N: 3}, Claim{W: 1}, Complete{W: 2}, Complete{W: 0, Back: 2}, Pause{W: 1}, Overslept{W: 2}, Replaced{W: 0, By: 2},
		Expire{Job: 7}, Lock{L: 1, Job: 4}, Release{L: 0, How: Commit}, Release{L: 1, How: Rollback},
		Release{L: 0, How: Cancel}, Release{L: 1, How: Terminate}, Crash{W: 0}, Drain{W: 2},
		ShortLease{W: 1}, ShortLease{W: 0, Late: true},
	}
	p := &Program{Header: map[string]string{"verdict": "property 1 (fencing): x"}, Ops: ops}
	got, err := Parse(p.Format())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Ops, ops) || got.Header["verdict"] != p.Header["verdict"] {
		t.Fatalf("round trip changed the program:\n%s\nvs\n%s", p.Format(), got.Format())
	}
	if _, err := ParseOp("w0 fly"); err == nil {
		t.Fatal("an unknown operation parsed")
	}
}
