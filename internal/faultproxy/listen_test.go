package faultproxy_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgqcheck/pgqcheck/internal/faultproxy"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/sut"
)

// TestListenPartition: a client the suite does not dial itself (a worker process, a library's
// own pool) connects to a listening proxy's port; a partition cuts its connection at once and
// refuses it until the partition is over, and the proxy leaves none of its goroutines behind.
func TestListenPartition(t *testing.T) {
	in := suttest.Install(t, sut.MustBuiltin(sut.DefaultQueue))
	cfg, err := pgx.ParseConfig(in.DSN)
	if err != nil {
		t.Fatal(err)
	}
	network, addr := "tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	if strings.HasPrefix(cfg.Host, "/") {
		network, addr = "unix", filepath.Join(cfg.Host, fmt.Sprintf(".s.PGSQL.%d", cfg.Port))
	}
	p, err := faultproxy.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	// Closed on every way out, so that a failure here leaves no goroutine to the proxy tests
	// that count them; the count below closes it first.
	defer p.Close()
	host, port, _ := net.SplitHostPort(p.Addr())
	dsn := fmt.Sprintf("host=%s port=%s user=%s password='%s' dbname=%s sslmode=disable connect_timeout=2", host, port, cfg.User, cfg.Password, cfg.Database)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.Ping(ctx); err != nil || len(p.Links()) != 1 {
		t.Fatalf("a session through the listening proxy: %v, %d links", err, len(p.Links()))
	}
	p.Partition(500 * time.Millisecond)
	if err := c.Ping(ctx); err == nil {
		t.Fatal("the session answered after its partition began")
	}
	if again, err := pgx.Connect(ctx, dsn); err == nil {
		again.Close(ctx)
		t.Fatal("a new session got through during the partition")
	}
	time.Sleep(600 * time.Millisecond)
	again, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("no session after the partition ended: %v", err)
	}
	again.Close(ctx)
	open := proxyGoroutines()
	p.Close()
	if open == 0 {
		t.Errorf("no proxy goroutine was seen before the proxy closed: the count below cannot fail")
	}
	if n := settledProxyGoroutines(5 * time.Second); n > 0 {
		t.Errorf("%d proxy goroutines still running after the proxy closed:\n%s", n, strings.Join(proxyStacks(), "\n\n"))
	}
}
