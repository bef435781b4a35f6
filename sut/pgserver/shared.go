package pgserver

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// Interrupt handling: one handler for the whole process, closing every
// registered server before exiting.
var interrupt struct {
	mu      sync.Mutex
	servers map[*Server]bool
	hooks   []func()
	once    sync.Once
}

// CleanupOnInterrupt arranges that on SIGINT or SIGTERM the server is closed
// (container removed, cluster stopped and deleted) and the process exits
// with status 128+signal (130 for SIGINT). Close unregisters the server.
func CleanupOnInterrupt(s *Server) {
	interrupt.mu.Lock()
	if interrupt.servers == nil {
		interrupt.servers = map[*Server]bool{}
	}
	interrupt.servers[s] = true
	interrupt.mu.Unlock()
	handleInterrupts()
}

// OnInterrupt adds f to what a SIGINT or SIGTERM runs after closing the servers, before the
// process exits, and handles those signals from now on, also while no server runs: a test
// binary's scratch folder goes with an interrupted run as with one that ends. f also runs
// where the caller's own ending runs it, so it must bear being run twice.
func OnInterrupt(f func()) {
	interrupt.mu.Lock()
	interrupt.hooks = append(interrupt.hooks, f)
	interrupt.mu.Unlock()
	handleInterrupts()
}

func handleInterrupts() {
	interrupt.once.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			sig := <-ch
			signal.Stop(ch)
			interrupted.Store(true)
			// The tests still running fail once their server is gone; those failures say
			// nothing of any queue, and rapid would save each as a fail file to replay.
			if f := flag.Lookup("rapid.nofailfile"); f != nil {
				_ = f.Value.Set("true")
			}
			interrupt.mu.Lock()
			var list []*Server
			for s := range interrupt.servers {
				list = append(list, s)
			}
			hooks := interrupt.hooks
			interrupt.mu.Unlock()
			if len(list) > 0 {
				fmt.Fprintf(os.Stderr, "pgqcheck: %v: stopping %d Postgres server(s)\n", sig, len(list))
			}
			for _, s := range list {
				if err := s.Close(); err != nil {
					fmt.Fprintln(os.Stderr, err)
				}
			}
			for _, f := range hooks {
				f()
			}
			code := 130
			if n, ok := sig.(syscall.Signal); ok {
				code = 128 + int(n)
			}
			os.Exit(code)
		}()
	})
}

var interrupted atomic.Bool

// Interrupted reports whether the process is stopping on SIGINT or SIGTERM: a test that fails
// from now on failed because its server is being stopped, and keeps nothing of its failure.
func Interrupted() bool { return interrupted.Load() }

func unregisterInterrupt(s *Server) {
	interrupt.mu.Lock()
	delete(interrupt.servers, s)
	interrupt.mu.Unlock()
}

var shared struct {
	mu  sync.Mutex
	srv *Server
	err error
}

// Shared returns the server shared by this process, starting it from the
// environment (OptionsFromEnv) on first use; Start prints its banner once.
// It also arranges cleanup on SIGINT/SIGTERM. A test binary that uses it
// closes it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }
func Shared(ctx context.Context) (*Server, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv != nil || shared.err != nil {
		return shared.srv, shared.err
	}
	// Not bound to ctx beyond startup: the server lives until Main ends.
	s, err := Start(context.WithoutCancel(ctx), OptionsFromEnv())
	if err != nil {
		shared.err = err
		return nil, err
	}
	CleanupOnInterrupt(s)
	shared.srv = s
	return s, nil
}

// Main runs m.Run, then closes the shared server if it was started, and
// returns the exit code: os.Exit(pgserver.Main(m)).
func Main(m interface{ Run() int }) int {
	code := m.Run()
	if err := CloseShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// CloseShared closes the shared server if it was started; the next Shared starts another.
func CloseShared() error {
	shared.mu.Lock()
	s := shared.srv
	shared.srv, shared.err = nil, nil
	shared.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}
