package program

import (
	"time"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
)

// The proxy faults' lines join the grammar's examples (TestOpsRoundTrip).
func init() {
	examples = append(examples, ProxyFault{S: "s1", Kind: faultproxy.DropReply}, ProxyFault{S: "s0", Kind: faultproxy.Cut},
		ProxyFault{S: "s2", Kind: faultproxy.DelayReply, For: 20 * time.Millisecond}, ProxyFault{S: "s1", Kind: faultproxy.Stall, For: time.Millisecond})
}
