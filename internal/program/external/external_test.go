package external_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/effectdest"
	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/internal/program/external"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Every operation reads back from the line it prints.
func TestOpsRoundTrip(t *testing.T) {
	for _, op := range []program.Op{
		external.Call{S: "w0"}, external.Call{S: "w1", Back: 2},
		external.Call{S: "w0", Fault: faultproxy.Fault{Kind: faultproxy.DropReply}},
		external.Call{S: "w2", Back: 1, Fault: faultproxy.Fault{Kind: faultproxy.Cut}},
		external.Call{S: "w0", Fault: faultproxy.Fault{Kind: faultproxy.DelayReply, For: 20 * time.Millisecond}},
		external.Call{S: "w1", Back: 1, Fault: faultproxy.Fault{Kind: faultproxy.Stall, For: time.Millisecond}},
		external.Count{S: "w1"}, external.Count{},
	} {
		got, err := program.ParseOp(op.String())
		if err != nil || !reflect.DeepEqual(got, op) {
			t.Errorf("%q read back as %#v (%v), want %#v", op, got, err, op)
		}
	}
}

// The operations apply only where the run has a destination, and a call only with a token.
func TestOpsNeedADestination(t *testing.T) {
	w := program.NewWorld(sut.MustBuiltin("seed"), program.Reader, "w0")
	w.Session("w0").Tokens = []program.Token{{ID: 1, Gen: 1}}
	if (external.Call{S: "w0"}).Applicable(w) || (external.Count{}).Applicable(w) {
		t.Error("an external operation applies without a destination")
	}
	w.Dest = "http://127.0.0.1:1/effects"
	if !(external.Call{S: "w0"}).Applicable(w) || (external.Call{S: "w0", Back: 1}).Applicable(w) || !(external.Count{}).Applicable(w) {
		t.Error("with a destination, a call of a held token or a count does not apply, or one of a token never held does")
	}
}

// A fencing destination holding two effects of a job, or none of a done job its workers
// called, breaks property 17 outright; one that does not fence promises neither.
func TestCheck(t *testing.T) {
	m := model.New(model.LowestID)
	if err := m.Enqueue(1); err != nil {
		t.Fatal(err)
	}
	if err := m.Claim(model.Window{}, time.Hour, true, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Complete(model.Window{}, 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		counts effectdest.Counts
		broken bool
	}{
		{effectdest.Counts{Mode: effectdest.Fenced, Jobs: []effectdest.Count{{Job: 1, Calls: 2, Applied: 2, InForce: 1}}}, false},
		{effectdest.Counts{Mode: effectdest.Fenced, Jobs: []effectdest.Count{{Job: 1, Calls: 2, Applied: 2, InForce: 2}}}, true},
		{effectdest.Counts{Mode: effectdest.Idempotent, Jobs: []effectdest.Count{{Job: 1, Calls: 1}}}, true},
		{effectdest.Counts{Mode: effectdest.Every, Jobs: []effectdest.Count{{Job: 1, Calls: 3, Applied: 3, InForce: 3}}}, false},
	} {
		err := external.Check(m, tc.counts)
		var v *model.Violation
		if tc.broken != (err != nil) || err != nil && (!errors.As(err, &v) || v.Property != model.PExternal || v.NotPromised) {
			t.Errorf("%+v judged %v", tc.counts, err)
		}
	}
}
