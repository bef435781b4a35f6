// Command pgqcheck runs the queue suite outside `go test`: the seed's walkthrough with recorded
// evidence, long search campaigns that save every failure where `go test` replays it, the
// mutant kill table, and reports.
//
// Exit status: 0 every property held, 1 a violation was found, 2 a usage or environment error
// (bad flags, an unreadable folder, no Postgres). Errors are one line starting "pgqcheck: ".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pgqcheck/sut"
	"pgqcheck/sut/pgserver"
)

// Exit statuses.
const (
	exitHeld      = 0
	exitViolation = 1
	exitError     = 2
)

type command struct {
	name, args, summary string
	run                 func(c *cli, args []string) error
}

// commands is filled by init functions in several files; commandOrder is how -h lists them.
var (
	commands     []*command
	commandOrder = []string{"walkthrough", "run", "check-history", "mutants", "report"}
)

func init() {
	commands = append(commands, []*command{
		{"walkthrough", "[-o evidence.json] [--sql-dir DIR | --queue NAME]", "reproduce the seed's walkthrough and write its evidence", runWalkthrough},
		{"run", "--duration 10m [--sql-dir DIR | --queue NAME] [--workers N] [--seed S] [--report DIR] [--mode all|sequential|stress|scheduled]", "search a queue for violations for a while, saving every failure for go test", runCampaign},
		{"mutants", "[--dir testdata/mutants] [--run REGEXP] [--budget 1m]", "prove the suite catches every mutant and passes every correct built-in queue", runMutants},
		{"report", "FILE... | -merge OUT.json FILE...", "print the summary of saved run reports, or merge shard reports", runReport},
	}...)
}

func sortedCommands() []*command {
	rank := func(name string) int {
		for i, n := range commandOrder {
			if n == name {
				return i
			}
		}
		return len(commandOrder)
	}
	out := append([]*command(nil), commands...)
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i].name) < rank(out[j].name) })
	return out
}

func main() {
	// rapid consults testing's flags (testing.Short) even outside `go test`.
	testing.Init()
	_ = flag.CommandLine.Parse(nil)
	os.Exit(mainWith(os.Args[1:], os.Stdout, os.Stderr))
}

// cli is one invocation: where output goes, and the interrupt state.
type cli struct {
	stdout, stderr io.Writer
	sig            *interrupts
}

// mainWith runs one command line and returns the exit status.
func mainWith(args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		c.usage(stderr)
		fmt.Fprintln(stderr, "pgqcheck: no command given; run one of the commands above (pgqcheck COMMAND -h for its flags)")
		return exitError
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		c.usage(stdout)
		return exitHeld
	}
	for _, cmd := range commands {
		if cmd.name == name {
			c.sig = watchInterrupts(stderr)
			defer c.sig.stop()
			return exitCode(cmd.run(c, args[1:]), stderr)
		}
	}
	fmt.Fprintf(stderr, "pgqcheck: unknown command %q; use one of %s (pgqcheck -h lists them)\n", name, commandNames())
	return exitError
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprintln(w, "pgqcheck proves or refutes that a PostgreSQL job queue keeps its promises.")
	fmt.Fprintln(w, "\nUsage: pgqcheck COMMAND [flags]")
	fmt.Fprintln(w, "\nCommands:")
	for _, cmd := range sortedCommands() {
		fmt.Fprintf(w, "  %-14s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintln(w, "\nPostgres comes from PGQCHECK_PG (auto, dsn, docker, local) with PGQCHECK_DSN / PGQCHECK_IMAGE;")
	fmt.Fprintln(w, "a queue folder from --sql-dir or PGQCHECK_SQL_DIR (default: the built-in seed queue).")
	fmt.Fprintln(w, "Exit status: 0 all properties held, 1 a violation was found, 2 usage or environment error.")
}

func commandNames() string {
	var n []string
	for _, c := range sortedCommands() {
		n = append(n, c.name)
	}
	return strings.Join(n, ", ")
}

// Errors carry their exit status.
type exitErr struct {
	code int
	msg  string
}

func (e *exitErr) Error() string { return e.msg }

// usageErrorf is a command-line mistake: exit 2, one line.
func usageErrorf(format string, args ...any) error {
	return &exitErr{exitError, "pgqcheck: " + fmt.Sprintf(format, args...)}
}

// violation ends a command that found a broken promise; the details are already printed.
type violation struct{ msg string }

func (v *violation) Error() string { return v.msg }

// errHelp is -h: usage already printed, exit 0.
var errHelp = errors.New("help")

func exitCode(err error, stderr io.Writer) int {
	var v *violation
	var ee *exitErr
	switch {
	case err == nil:
		return exitHeld
	case errors.Is(err, errHelp):
		return exitHeld
	case errors.As(err, &v):
		if v.msg != "" {
			fmt.Fprintln(stderr, v.msg)
		}
		return exitViolation
	case errors.As(err, &ee):
		fmt.Fprintln(stderr, oneLine(ee.msg))
		return ee.code
	}
	msg := oneLine(err.Error())
	if !strings.HasPrefix(msg, "pgqcheck: ") {
		msg = "pgqcheck: " + msg
	}
	fmt.Fprintln(stderr, msg)
	return exitError
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// flags builds a command's flag set whose errors become one-line usage errors and whose -h
// prints the command's usage on stdout.
func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses flags that may come before or after positional arguments, and returns the
// positional ones.
func (c *cli) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.commandUsage(fs)
				return nil, errHelp
			}
			return nil, usageErrorf("%s: %v; run pgqcheck %s -h for its flags", fs.Name(), err, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// A "--" before this argument ends the flags; everything after it is positional.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func (c *cli) commandUsage(fs *flag.FlagSet) {
	for _, cmd := range commands {
		if cmd.name == fs.Name() {
			fmt.Fprintf(c.stdout, "Usage: pgqcheck %s %s\n\n%s.\n\nFlags:\n", cmd.name, cmd.args, capitalize(cmd.summary))
		}
	}
	fs.SetOutput(c.stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if d, ok := commandDetails[fs.Name()]; ok {
		fmt.Fprintln(c.stdout)
		fmt.Fprint(c.stdout, d)
	}
}

// commandDetails is the rest of a command's -h text.
var commandDetails = map[string]string{}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// interrupts turns SIGINT/SIGTERM into two contexts: the first signal cancels soft (stop after
// the current unit of work, still writing results), the second cancels hard (abandon it). The
// servers and databases are released by the commands' deferred cleanup either way, which is why
// pgserver's own exit-on-signal handler is not used here. A third signal exits at once.
type interrupts struct {
	soft, hard context.Context
	ch         chan os.Signal
	cancelS    context.CancelFunc
	cancelH    context.CancelFunc
	done       chan struct{}
	mu         sync.Mutex
	count      int
	softNote   string
}

func watchInterrupts(stderr io.Writer) *interrupts {
	i := &interrupts{ch: make(chan os.Signal, 3), done: make(chan struct{})}
	i.soft, i.cancelS = context.WithCancel(context.Background())
	i.hard, i.cancelH = context.WithCancel(context.Background())
	i.softNote = "pgqcheck: interrupted; cleaning up (press Ctrl-C again to stop waiting)"
	signal.Notify(i.ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for {
			select {
			case <-i.done:
				return
			case <-i.ch:
			}
			i.mu.Lock()
			i.count++
			n, note := i.count, i.softNote
			i.mu.Unlock()
			switch n {
			case 1:
				fmt.Fprintln(stderr, "\n"+note)
				i.cancelS()
			case 2:
				fmt.Fprintln(stderr, "pgqcheck: interrupted again; abandoning the work in progress and cleaning up (a third Ctrl-C exits at once)")
				i.cancelS()
				i.cancelH()
			default:
				fmt.Fprintln(stderr, "pgqcheck: exiting without cleanup; databases named pgqcheck_* may be left on the server")
				os.Exit(exitError)
			}
		}
	}()
	return i
}

// onSoft sets what the first Ctrl-C announces.
func (i *interrupts) onSoft(note string) {
	i.mu.Lock()
	i.softNote = note
	i.mu.Unlock()
}

func (i *interrupts) stop() {
	signal.Stop(i.ch)
	close(i.done)
	i.cancelS()
	i.cancelH()
}

// startServer starts Postgres as the environment says and prints its banner.
func (c *cli) startServer(ctx context.Context) (*pgserver.Server, error) {
	o := pgserver.OptionsFromEnv()
	o.Log = c.stdout
	s, err := pgserver.Start(ctx, o)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &exitErr{exitError, "pgqcheck: interrupted while starting Postgres; nothing was left running"}
		}
		return nil, err
	}
	return s, nil
}

// queueFlags are the flags that choose the queue under test.
type queueFlags struct {
	sqlDir, name string
}

func (q *queueFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&q.sqlDir, "sql-dir", "", "folder holding the queue's SQL files (default: $"+sut.EnvSQLDir+", else the built-in queue)")
	fs.StringVar(&q.name, "queue", "", "built-in queue to use when no folder is given: "+strings.Join(sut.Builtins(), ", ")+" (default "+sut.DefaultQueue+")")
}

// load returns the queue the flags name: --sql-dir, else $PGQCHECK_SQL_DIR, else the built-in.
func (q *queueFlags) load(cmd string) (*sut.Queue, error) {
	dir, from := q.sqlDir, "--sql-dir"
	if dir == "" && q.name == "" {
		dir, from = os.Getenv(sut.EnvSQLDir), sut.EnvSQLDir
	}
	if dir != "" && q.name != "" {
		return nil, usageErrorf("%s: --queue %s and %s %s both name a queue; give one", cmd, q.name, from, dir)
	}
	if dir == "" {
		name := q.name
		if name == "" {
			name = sut.DefaultQueue
		}
		qu, err := sut.Builtin(name)
		if err != nil {
			return nil, usageErrorf("%s: no built-in queue %q; use one of %s, or --sql-dir DIR", cmd, name, strings.Join(sut.Builtins(), ", "))
		}
		return qu, nil
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, usageErrorf("%s: %s %s cannot be read (%v); pass the folder holding the queue's schema.sql, enqueue.sql, claim.sql, complete.sql, expire.sql and snapshot.sql", cmd, from, dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return nil, usageErrorf("%s: %s %s is a file; pass the folder that holds the queue's .sql files", cmd, from, dir)
	}
	qu, err := sut.LoadDir(dir)
	if err != nil {
		return nil, &exitErr{exitError, err.Error()}
	}
	return qu, nil
}

// writableFile checks up front that path can be written (creating its folder), so a long run
// does not end by failing to save its result.
func writableFile(cmd, flagName, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", usageErrorf("%s: %s %s: %v; pass a writable path", cmd, flagName, path, err)
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return "", usageErrorf("%s: %s %s is a folder; pass a file path", cmd, flagName, path)
	}
	if err := writableDir(filepath.Dir(abs)); err != nil {
		return "", usageErrorf("%s: %s %s cannot be written (%v); pass a path in a writable folder", cmd, flagName, path, err)
	}
	return abs, nil
}

// writableDir creates dir if needed and proves a file can be created in it.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return unwrapPath(err)
	}
	f, err := os.CreateTemp(dir, ".pgqcheck-probe-*")
	if err != nil {
		return unwrapPath(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// moduleRoot finds the pgqcheck module's root above the working directory: replayable cases go
// under its testdata/, where `go test` in that folder looks for them.
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "module" && f[1] == "pgqcheck" {
					return dir, true
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// positive rejects zero and negative durations.
func positive(cmd, flagName string, d time.Duration) error {
	if d <= 0 {
		return usageErrorf("%s: %s must be positive (got %s); pass a duration such as %s 10m", cmd, flagName, d, flagName)
	}
	return nil
}

func sortedKeys[M ~map[K]V, K ~string, V any](m M) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
