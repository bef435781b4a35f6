package faultproxy_test

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

// proxied opens a session on in through a fresh proxy and returns it with its link. The proxy
// is closed when the test ends, and the test checks that it left none of its goroutines behind
// (pgx's and the rest of the process's come and go on their own, so only the proxy's count).
func proxied(t *testing.T, in *sut.Installed) (*sut.Session, *faultproxy.Link, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.New()
	if err != nil {
		t.Fatal(err)
	}
	var link *faultproxy.Link
	s, err := in.Connect(context.Background(), "proxied", sut.SessionOptions{StatementTimeout: 10 * time.Second, Dial: p.DialFunc(func(l *faultproxy.Link) { link = l })})
	if err != nil {
		p.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		open := proxyGoroutines()
		s.Close()
		p.Close()
		if open == 0 {
			t.Errorf("no proxy goroutine was seen before the proxy closed: the count below cannot fail")
		}
		if n := settledProxyGoroutines(5 * time.Second); n > 0 {
			t.Errorf("%d proxy goroutines still running 5s after the proxy closed (%d before):\n%s", n, open, strings.Join(proxyStacks(), "\n\n"))
		}
	})
	return s, link, p
}

// settledProxyGoroutines waits up to limit for the proxy's goroutines to end and returns how
// many are left. Close returns once each has signalled its WaitGroup, but a goroutine is still on
// the stack until it has returned from the deferred call, so one seen just after Close is only
// a leak if it stays.
func settledProxyGoroutines(limit time.Duration) int {
	deadline := time.Now().Add(limit)
	for {
		n := proxyGoroutines()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proxyGoroutines counts the goroutines running the proxy's own code.
func proxyGoroutines() int { return len(proxyStacks()) }

// proxyStacks are the stacks of the goroutines running the proxy's own code.
func proxyStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/pgqcheck/pgqcheck/internal/faultproxy.(*") {
			out = append(out, g)
		}
	}
	return out
}

// proxiedJob installs the seed queue, opens a session on it through a proxy (proxied) and
// enqueues the job a fault test claims.
func proxiedJob(t *testing.T) (*sut.Installed, *sut.Session, *faultproxy.Link, int64) {
	t.Helper()
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	s, link, _ := proxied(t, in)
	id, _, err := s.Enqueue(context.Background(), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	return in, s, link, id
}

func state(t *testing.T, in *sut.Installed, id int64) (model.State, int64) {
	t.Helper()
	var st string
	var gen int64
	if err := in.Admin().QueryRow(context.Background(), "SELECT state, generation FROM jobs WHERE id = $1", id).Scan(&st, &gen); err != nil {
		t.Fatal(err)
	}
	return model.State(st), gen
}

// TestDropReply: the claim reaches the server and commits; the client gets no answer, only a
// lost connection, and the proxy reports the hit.
func TestDropReply(t *testing.T) {
	in, s, link, id := proxiedJob(t)
	ctx := context.Background()
	hit := false
	link.Arm(faultproxy.Fault{Kind: faultproxy.DropReply}, func() { hit = true })
	_, _, ok, _, err := s.Claim(ctx, time.Hour)
	var lost *sut.LostReply
	if err == nil || ok || !errors.As(err, &lost) {
		t.Fatalf("claim through a dropped reply: ok=%v err=%v; want a lost reply", ok, err)
	}
	if !hit || link.Hits() != 1 {
		t.Fatalf("the fault did not report its hit (hit=%v, hits=%d)", hit, link.Hits())
	}
	if st, gen := state(t, in, id); st != model.Running || gen != 1 {
		t.Fatalf("job %d is %s/g%d after the dropped claim; the server should have run and committed it (running/g1)", id, st, gen)
	}
	select {
	case <-link.Closed():
	case <-time.After(5 * time.Second):
		t.Fatal("the link stayed open after dropping the reply")
	}
}

// TestCut: the connection is cut in the middle of the claim's request: the server runs
// nothing of it, and the client sees a lost connection.
func TestCut(t *testing.T) {
	in, s, link, id := proxiedJob(t)
	ctx := context.Background()
	link.Arm(faultproxy.Fault{Kind: faultproxy.Cut}, nil)
	if _, _, ok, _, err := s.Claim(ctx, time.Hour); err == nil || ok {
		t.Fatalf("claim through a cut connection: ok=%v err=%v; want an error", ok, err)
	}
	if link.Hits() != 1 {
		t.Fatalf("hits = %d, want 1", link.Hits())
	}
	// The backend may take a moment to read the truncated message and exit; it never claims.
	time.Sleep(100 * time.Millisecond)
	if st, gen := state(t, in, id); st != model.Ready || gen != 0 {
		t.Fatalf("job %d is %s/g%d after a claim cut mid-message; the server must not have run it", id, st, gen)
	}
}

// TestDelayAndStall: a delayed answer and a stalled request arrive late but whole; the session
// goes on. The delay is seen on the client's clock, the stall on the database's (the statement
// runs after the stall).
func TestDelayAndStall(t *testing.T) {
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	ctx := context.Background()
	s, link, _ := proxied(t, in)
	const d = 150 * time.Millisecond
	link.Arm(faultproxy.Fault{Kind: faultproxy.DelayReply, For: d}, nil)
	start := time.Now()
	id, _, err := s.Enqueue(ctx, `{}`)
	if err != nil {
		t.Fatalf("enqueue through a delayed reply: %v", err)
	}
	if took := time.Since(start); took < d {
		t.Fatalf("the delayed enqueue returned after %v, before the delay of %v", took, d)
	}
	// A plain statement reads the database's clock after the delayed answer, before the stall.
	_, mark, err := s.Snapshot(ctx)
	if err != nil || !mark.Known() {
		t.Fatalf("snapshot after the delayed enqueue: %v (clock %v)", err, mark)
	}
	link.Arm(faultproxy.Fault{Kind: faultproxy.Stall, For: d}, nil)
	start = time.Now()
	got, gen, ok, clk, err := s.Claim(ctx, time.Hour)
	if err != nil || !ok || got != id || gen != 1 {
		t.Fatalf("claim through a stall: job %d gen %d ok=%v err=%v; want job %d gen 1", got, gen, ok, err, id)
	}
	if took := time.Since(start); took < d {
		t.Fatalf("the stalled claim returned after %v, before the stall of %v", took, d)
	}
	// The server waits mid-message, so the claim's last clock reading comes at least the stall
	// after the snapshot's. Where the stall falls among the claim's three statements (the
	// clock reading, the claim, the clock reading) depends on how much of the request the
	// proxy had read when it split it; the window shows the stall only when it fell after
	// the first reading.
	if gap := clk.To.Sub(mark.To); gap < d {
		t.Fatalf("the stalled claim's window ends %v after the snapshot before it; the stall (%v) did not hold the server", gap, d)
	}
	where := "inside it"
	if clk.To.Sub(clk.From) < d {
		where = "before it"
	}
	t.Logf("the claim's window opened %v after the snapshot's closed and is %v wide: the stall fell %s", clk.From.Sub(mark.To), clk.To.Sub(clk.From), where)
	if link.Hits() != 2 {
		t.Fatalf("hits = %d, want 2", link.Hits())
	}
	if _, _, err := s.Enqueue(ctx, `{}`); err != nil {
		t.Fatalf("the session did not go on after its faults: %v", err)
	}
}

// TestStrangerRefused: a connection to the listener that does not name a link is closed, and
// the listener is on loopback only.
func TestStrangerRefused(t *testing.T) {
	p, err := faultproxy.New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	host, _, _ := net.SplitHostPort(p.Addr())
	if host != "127.0.0.1" {
		t.Fatalf("proxy listens on %s, want loopback", p.Addr())
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("12345678"))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	if _, err := c.Read(b[:]); err == nil {
		t.Fatal("a connection naming no link was answered")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a connection naming no link was left open")
	}
}

// TestDropCommitReply: the seed's uncertain commit. The COMMIT of a claim transaction reaches
// the server, which commits; its answer is dropped. The client's error is a lost reply (never
// "not sent", which pgx's own "conn closed" would claim), and the claim took effect.
func TestDropCommitReply(t *testing.T) {
	in, s, link, id := proxiedJob(t)
	ctx := context.Background()
	if err := s.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _, err := s.Claim(ctx, time.Hour); err != nil || !ok {
		t.Fatalf("claim in the transaction: ok=%v err=%v", ok, err)
	}
	link.Arm(faultproxy.Fault{Kind: faultproxy.DropReply}, nil)
	err := s.Commit(ctx)
	var lost *sut.LostReply
	if !errors.As(err, &lost) || pgconn.SafeToRetry(err) {
		t.Fatalf("COMMIT through a dropped reply: %v (%T); want a lost reply, not safe to retry", err, err)
	}
	if st, gen := state(t, in, id); st != model.Running || gen != 1 {
		t.Fatalf("job %d is %s/g%d; the COMMIT should have committed the claim (running/g1)", id, st, gen)
	}
}
