// Command pgqcheck runs the queue suite outside `go test`: the seed's walkthrough with recorded
// evidence, long search campaigns that save every failure where `go test` replays it, replays
// of saved cases, the mutant kill table, and reports. The work itself is package campaign's;
// this command holds the flags, the exit statuses, the signals and the output streams.
//
// Exit status: 0 every property held, 1 a violation was found, 2 a usage or environment error
// (bad flags, an unreadable folder, no Postgres). Errors are one line starting "pgqcheck: ".
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	_ "github.com/pgqcheck/pgqcheck/internal/goqueues" // the Go queues and their mutants
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
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
	details             string // the rest of the command's -h text
}

// commands, in the order -h lists them.
var commands []*command

func init() {
	commands = []*command{
		{"walkthrough", "[-o evidence.json] [--sql-dir DIR | --queue NAME]", "reproduce the seed's walkthrough and write its evidence", runWalkthrough, walkthroughDetails},
		{"run", "--duration 10m [--sql-dir DIR | --queue NAME] [--workers N] [--seed S] [--report DIR] [--mode all|sequential|stress|scheduled]", "search a queue for violations for a while, saving every failure for go test", runCampaign, runDetails},
		{"replay", "FILE [--sql-dir DIR | --queue NAME]", "replay a saved case (an .ops program, a FuzzScheduled input or a history) against a queue", runReplay, replayDetails},
		{"check-history", "FILE [-html OUT.html] [-measures OUT.html]", "re-check a saved concurrent history for linearizability", runCheckHistory, checkHistoryDetails},
		{"mutants", "[--dir testdata/mutants] [--run REGEXP] [--budget 1m]", "prove the suite catches every mutant and passes every correct built-in queue", runMutants, mutantsDetails},
		{"report", "FILE... | -merge OUT.json FILE...", "print the summary of saved run reports, or merge shard reports", runReport, reportDetails},
		{"matrix", "[--servers IMAGE,...] [--duration 20s] [--out matrix.md]", "run the walkthrough, each built-in queue's verdict and the kill table on several PostgreSQL versions", runMatrix, matrixDetails},
		{"deploy", deployArgs, "judge a queue as it is deployed: real worker processes under stalls, kills, cuts and restarts", runDeploy, fmt.Sprintf(deployDetails, deployTargets())},
	}
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
	var names []string
	for _, cmd := range commands {
		names = append(names, cmd.name)
		if len(args) > 0 && cmd.name == args[0] {
			c.sig = watchInterrupts(stderr)
			defer c.sig.stop()
			return exitCode(cmd.run(c, args[1:]), stderr)
		}
	}
	switch {
	case len(args) == 0:
		c.usage(stderr)
		fmt.Fprintln(stderr, "pgqcheck: no command given; run one of the commands above (pgqcheck COMMAND -h for its flags)")
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help":
		c.usage(stdout)
		return exitHeld
	default:
		fmt.Fprintf(stderr, "pgqcheck: unknown command %q; use one of %s (pgqcheck -h lists them)\n", args[0], strings.Join(names, ", "))
	}
	return exitError
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, "pgqcheck proves or refutes that a PostgreSQL job queue keeps its promises.\n\nUsage: pgqcheck COMMAND [flags]\n\nCommands:\n")
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-14s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, "\nPostgres comes from PGQCHECK_PG (auto, dsn, docker, local) with PGQCHECK_DSN / PGQCHECK_IMAGE;\n",
		"a queue folder from --sql-dir or PGQCHECK_SQL_DIR (default: the built-in seed queue).\n",
		"Exit status: 0 all properties held, 1 a violation was found, 2 usage or environment error.\n")
}

// exitErr ends a command with an exit status and, unless empty, a one-line message.
type exitErr struct {
	code int
	msg  string
}

func (e *exitErr) Error() string { return e.msg }

// usageErrorf is a command-line mistake: exit 2, one line.
func usageErrorf(format string, args ...any) error {
	return &exitErr{exitError, "pgqcheck: " + fmt.Sprintf(format, args...)}
}

// violated ends a command that found a broken promise; the details are already printed.
func violated(msg string) error { return &exitErr{exitViolation, msg} }

// errHelp is -h: usage already printed, exit 0.
var errHelp = errors.New("help")

func exitCode(err error, stderr io.Writer) int {
	var ee *exitErr
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitHeld
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintln(stderr, textfmt.OneLine(ee.msg))
		}
		return ee.code
	}
	msg := textfmt.OneLine(err.Error())
	if !strings.HasPrefix(msg, "pgqcheck: ") {
		msg = "pgqcheck: " + msg
	}
	fmt.Fprintln(stderr, msg)
	return exitError
}

// flags builds a command's flag set; parse turns its errors into one-line usage errors and
// its -h into the command's usage on stdout.
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
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			c.commandUsage(fs)
			return nil, errHelp
		} else if err != nil {
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
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// parseFlags parses a command that takes flags only; hint says where a stray argument belongs.
func (c *cli) parseFlags(fs *flag.FlagSet, args []string, hint string) error {
	pos, err := c.parse(fs, args)
	if err == nil && len(pos) > 0 {
		err = usageErrorf("%s: unexpected argument %q; %s", fs.Name(), pos[0], hint)
	}
	return err
}

func (c *cli) commandUsage(fs *flag.FlagSet) {
	for _, cmd := range commands {
		if cmd.name == fs.Name() {
			fmt.Fprintf(c.stdout, "Usage: pgqcheck %s %s\n\n%s%s.\n\nFlags:\n", cmd.name, cmd.args, strings.ToUpper(cmd.summary[:1]), cmd.summary[1:])
			fs.SetOutput(c.stdout)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
			fmt.Fprintf(c.stdout, "\n%s", cmd.details)
		}
	}
}

// interrupts turns SIGINT/SIGTERM into two contexts: the first signal cancels soft (stop after
// the current unit of work, still writing results), the second cancels hard (abandon it). The
// servers and databases are released by the commands' deferred cleanup either way, which is why
// pgserver's own exit-on-signal handler is not used here. A third signal exits at once.
type interrupts struct {
	soft, hard       context.Context
	cancelS, cancelH context.CancelFunc
	ch               chan os.Signal
	done             chan struct{}
	mu               sync.Mutex
	softNote         string
}

func watchInterrupts(stderr io.Writer) *interrupts {
	i := &interrupts{ch: make(chan os.Signal, 3), done: make(chan struct{}), softNote: "pgqcheck: interrupted; cleaning up (press Ctrl-C again to stop waiting)"}
	i.soft, i.cancelS = context.WithCancel(context.Background())
	i.hard, i.cancelH = context.WithCancel(context.Background())
	signal.Notify(i.ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for n := 1; ; n++ {
			select {
			case <-i.done:
				return
			case <-i.ch:
			}
			i.mu.Lock()
			note := i.softNote
			i.mu.Unlock()
			switch n {
			case 1:
				fmt.Fprintln(stderr, "\n"+note)
				i.cancelS()
			case 2:
				fmt.Fprintln(stderr, "pgqcheck: interrupted again; abandoning the work in progress and cleaning up (a third Ctrl-C exits at once)")
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
	return c.startServerFor(ctx, false)
}

// startServerFor starts Postgres as startServer does, in crash mode (pgserver.Options.Crash)
// when crash is set.
func (c *cli) startServerFor(ctx context.Context, crash bool) (*pgserver.Server, error) {
	o := pgserver.OptionsFromEnv()
	o.Log, o.Crash = c.stdout, crash
	s, err := pgserver.Start(ctx, o)
	if err != nil && ctx.Err() != nil {
		return nil, &exitErr{exitError, "pgqcheck: interrupted while starting Postgres; nothing was left running"}
	}
	return s, err
}

// interrupted replaces an error caused by Ctrl-C with a plain statement of it.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &exitErr{exitError, "pgqcheck: interrupted; the database was dropped and nothing was left running"}
	}
	return err
}

// queueFlags are the flags that choose the queue under test.
type queueFlags struct{ sqlDir, name string }

func (q *queueFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&q.sqlDir, "sql-dir", "", "folder holding the queue's SQL files (default: $"+sut.EnvSQLDir+", else the built-in queue)")
	names := sut.Builtins()
	for _, g := range sut.GoQueues() {
		names = append(names, g.Name+" (Go)")
	}
	fs.StringVar(&q.name, "queue", "", "built-in or Go queue to use when no folder is given: "+strings.Join(names, ", ")+" (default "+sut.DefaultQueue+")")
}

// load returns the queue the flags name: --sql-dir, else $PGQCHECK_SQL_DIR, else the built-in.
func (q *queueFlags) load(cmd string) (*sut.Queue, error) {
	dir, from, name := q.sqlDir, "--sql-dir", q.name
	if dir == "" && name == "" {
		dir, from, name = os.Getenv(sut.EnvSQLDir), sut.EnvSQLDir, os.Getenv(sut.EnvQueue)
	}
	qu, err := campaign.ResolveQueue(dir, from, name)
	return qu, inputError(cmd, err)
}

// inputError turns a campaign's *InputError into a usage error of cmd; any other error is an
// environment error (exit 2 as well), printed on one line as it is.
func inputError(cmd string, err error) error {
	var ie *campaign.InputError
	if errors.As(err, &ie) {
		return usageErrorf("%s: %s", cmd, ie.Msg)
	}
	return err
}

// randomSeed picks a seed when none is given; the command prints it, so the run repeats.
func randomSeed(seed uint64) uint64 {
	for seed == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		seed = binary.LittleEndian.Uint64(b[:]) >> 1
	}
	return seed
}

// writableFile checks up front that path can be written (creating its folder), so a long run
// does not end by failing to save its result.
func writableFile(cmd, flagName, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if st, serr := os.Stat(abs); err == nil && serr == nil && st.IsDir() {
		return "", usageErrorf("%s: %s %s is a folder; pass a file path", cmd, flagName, path)
	}
	if err == nil {
		err = campaign.WritableDir(filepath.Dir(abs))
	}
	if err != nil {
		return "", usageErrorf("%s: %s %s cannot be written (%v); pass a path in a writable folder", cmd, flagName, path, err)
	}
	return abs, nil
}

// positive rejects zero and negative durations.
func positive(cmd, flagName string, d time.Duration) error {
	if d <= 0 {
		return usageErrorf("%s: %s must be positive (got %s); pass a duration such as %s 10m", cmd, flagName, d, flagName)
	}
	return nil
}
