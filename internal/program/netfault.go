package program

import (
	"fmt"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
)

// ProxyFault arms a fault proxy fault for session S's next statement: its reply dropped after
// the server ran it, the connection cut in the middle of it, its reply delayed, or its request
// stalled half sent, for For. Only a scheduler whose sessions go through the fault proxy
// carries it out; it issues no statement of its own, and elsewhere it does nothing.
type ProxyFault struct {
	S    string
	Kind faultproxy.Kind
	For  time.Duration
}

const (
	fmtDropReply  = "drop reply"
	fmtCut        = "cut"
	fmtDelayReply = "delay reply %v"
	fmtStall      = "stall %v"
)

func (o ProxyFault) String() string {
	switch o.Kind {
	case faultproxy.DropReply:
		return on(o.S) + fmtDropReply
	case faultproxy.Cut:
		return on(o.S) + fmtCut
	case faultproxy.DelayReply:
		return on(o.S) + fmt.Sprintf(fmtDelayReply, o.For)
	}
	return on(o.S) + fmt.Sprintf(fmtStall, o.For)
}
func (o ProxyFault) On() string { return o.S }
func (o ProxyFault) Applicable(w *World) bool {
	_, ok := idle(w, o.S)
	return ok
}
func (o ProxyFault) Stmts(w *World) []Stmt { return nil }

// Fault is the proxy's fault this operation arms.
func (o ProxyFault) Fault() faultproxy.Fault { return faultproxy.Fault{Kind: o.Kind, For: o.For} }

func init() {
	plain := func(format string, k faultproxy.Kind) {
		rule(format, func(s string, _ []string) (Op, error) { return ProxyFault{S: s, Kind: k}, nil })
	}
	timed := func(format string, k faultproxy.Kind) {
		rule(format, func(s string, v []string) (Op, error) {
			d, err := dur(v[0])
			return ProxyFault{S: s, Kind: k, For: d}, err
		})
	}
	plain(fmtDropReply, faultproxy.DropReply)
	plain(fmtCut, faultproxy.Cut)
	timed(fmtDelayReply, faultproxy.DelayReply)
	timed(fmtStall, faultproxy.Stall)
}
