package external_test

import (
	"reflect"
	"testing"
	"time"

	"pgqcheck/faultproxy"
	"pgqcheck/program"
	"pgqcheck/program/external"
	"pgqcheck/sut"
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
