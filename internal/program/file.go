package program

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
)

// A program file is one operation per line, exactly as String prints it; '#' starts a comment.
// Header comments of the form "# key: value" say what the program is: its mode (sequential
// when absent), the queue and verdict it was found with. A scheduled program's lines are its
// interleaving: the order in which its sessions issued their statements.

// syntax is one operation's line: the format it prints with, and how to build it from the
// values that format's verbs matched.
type syntax struct {
	format string
	re     *regexp.Regexp
	build  func(s string, v []string) (Op, error)
}

var grammar []syntax

// Syntax registers an operation's line: the format it prints with (String) and parses from,
// and how to build the operation from what the format's verbs matched (%d a number, %v a
// duration, %s a session) and the session it runs on. Each operation of this package registers
// its own; a kind of operation defined elsewhere registers its line the same way, from an init
// function.
func Syntax(format string, build func(session string, values []string) (Op, error)) {
	rule(format, build)
}

// rule registers a format. The regexp is made from the format itself: %d matches a number,
// %v a duration, %s a session.
func rule(format string, build func(s string, v []string) (Op, error)) {
	var re strings.Builder
	re.WriteString("^")
	rest := format
	for {
		i := strings.IndexByte(rest, '%')
		if i < 0 || i+1 >= len(rest) {
			re.WriteString(regexp.QuoteMeta(rest))
			break
		}
		re.WriteString(regexp.QuoteMeta(rest[:i]))
		switch rest[i+1] {
		case 'd':
			re.WriteString(`(\d+)`)
		case 'v':
			re.WriteString(`([0-9.]+(?:ns|us|µs|ms|s|m|h)(?:[0-9.]+(?:ns|us|µs|ms|s|m|h))*)`)
		case 's':
			re.WriteString(`([a-z]+\d+)`)
		}
		rest = rest[i+2:]
	}
	re.WriteString("$")
	grammar = append(grammar, syntax{format, regexp.MustCompile(re.String()), build})
}

func num(v string) int {
	n, _ := strconv.Atoi(v)
	return n
}

func dur(v string) (time.Duration, error) { return time.ParseDuration(v) }

func init() {
	plain := func(format string, f func(s string) Op) {
		rule(format, func(s string, _ []string) (Op, error) { return f(s), nil })
	}
	rule(fmtEnqueue, func(s string, v []string) (Op, error) { return Enqueue{S: s, N: num(v[0])}, nil })
	plain(fmtClaim, func(s string) Op { return Claim{S: s} })
	rule(fmtClaimLease, func(s string, v []string) (Op, error) {
		d, err := dur(v[0])
		return Claim{S: s, Lease: d}, err
	})
	plain(fmtComplete, func(s string) Op { return Complete{S: s} })
	rule(fmtCompleteBack, func(s string, v []string) (Op, error) { return Complete{S: s, Back: num(v[0])}, nil })
	rule(fmtExpire, func(s string, v []string) (Op, error) { return Expire{S: s, Job: int64(num(v[0]))}, nil })
	plain(fmtExpireClaim, func(s string) Op { return ExpireClaim{S: s} })
	rule(fmtExpireClaimBack, func(s string, v []string) (Op, error) { return ExpireClaim{S: s, Back: num(v[0])}, nil })
	plain(fmtPause, func(s string) Op { return Pause{W: s} })
	plain(fmtSnapshot, func(s string) Op { return Snapshot{S: s} })
	plain(fmtBegin, func(s string) Op { return Begin{S: s} })
	rule(fmtLock, func(s string, v []string) (Op, error) { return Lock{S: s, Job: int64(num(v[0]))}, nil })
	plain(fmtCommit, func(s string) Op { return Commit{S: s} })
	plain(fmtRollback, func(s string) Op { return Rollback{S: s} })
	plain(fmtInterrupt, func(s string) Op { return Interrupt{S: s} })
	plain(fmtTerminate, func(s string) Op { return Terminate{S: s} })
	plain(fmtCrash, func(s string) Op { return Crash{W: s} })
	plain(fmtDrain, func(s string) Op { return Drain{S: s} })
	plain(fmtRescue, func(s string) Op { return Rescue{S: s} })
	plain(fmtOverslept, func(s string) Op { return Overslept{W: s} })
	rule(fmtReplaced, func(s string, v []string) (Op, error) {
		if v[1] != s {
			return nil, fmt.Errorf("the worker that pauses (%s) must be the one that completes (%s)", s, v[1])
		}
		return Replaced{W: s, By: v[0]}, nil
	})
	short := func(late bool) func(s string, v []string) (Op, error) {
		return func(s string, v []string) (Op, error) { return ShortLease{W: s, Late: late}, nil }
	}
	rule(fmtShortEarly, short(false))
	rule(fmtShortLate, short(true))
	grammar = append(grammar, syntax{"begin; ...; claim; ...", regexp.MustCompile(`^(begin; .*claim.*; (?:commit|rollback))$`), parseClaimTxn})
	rule(fmtSleep, func(_ string, v []string) (Op, error) {
		d, err := dur(v[0])
		return Sleep{D: d}, err
	})
	near := func(after bool) func(s string, v []string) (Op, error) {
		return func(s string, v []string) (Op, error) {
			d, err := dur(v[0])
			return Near{W: s, Margin: d, After: after}, err
		}
	}
	rule(fmtNearBefore, near(false))
	rule(fmtNearAfter, near(true))
	rule(fmtNearJustBefore, func(s string, _ []string) (Op, error) { return Near{W: s, Tight: true}, nil })
	rule(fmtNearJustAfter, func(s string, _ []string) (Op, error) { return Near{W: s, After: true, Tight: true}, nil })
	rule(fmtRescueTxn, func(s string, v []string) (Op, error) { return RescueTxn{S: s, Edge: v[0]}, nil })
	rule("begin; lock job %d; commit", func(s string, v []string) (Op, error) {
		return LockTxn{S: s, Job: int64(num(v[0])), Commit: true}, nil
	})
	rule("begin; lock job %d; rollback", func(s string, v []string) (Op, error) { return LockTxn{S: s, Job: int64(num(v[0]))}, nil })
}

// parseClaimTxn reads a claim transaction's line: its parts, separated by "; ", each read by
// the grammar as it prints alone (a pause; the claim, on the transaction's session), and
// "complete it".
func parseClaimTxn(s string, v []string) (Op, error) {
	o := ClaimTxn{S: s}
	parts := strings.Split(v[0], "; ")
	claimed := false
	for i, part := range parts {
		switch {
		case i == 0 && part == fmtBegin:
			continue
		case i == len(parts)-1 && (part == fmtCommit || part == fmtRollback):
			o.Commit = part == fmtCommit
			continue
		case part == fmtCompleteIt && claimed:
			o.Complete = true
			continue
		}
		op, err := ParseOp(part)
		if _, pause := op.(Sleep); err != nil || !pause {
			op, err = ParseOp(on(s) + part)
		}
		if err != nil {
			op, err = ParseOp(part) // a pause to another session's lease edge names that session
		}
		switch p := op.(type) {
		case Sleep:
			if claimed {
				o.Hold = p.D
			} else {
				o.Wait = p.D
			}
		case Near:
			switch {
			case !p.Tight || !p.After:
				return nil, fmt.Errorf("%q: a claim transaction pauses to just after a lease ends", part)
			case claimed && p.W == s:
				o.HoldEdge = true
			case !claimed:
				o.WaitEdge = p.W
			default:
				return nil, fmt.Errorf("%q: a claim transaction waits across another session's lease before its claim, or its own after it", part)
			}
		case Claim:
			if claimed {
				return nil, fmt.Errorf("%q: a claim transaction claims once", part)
			}
			o.Lease, claimed = p.Lease, true
		default:
			return nil, fmt.Errorf("%q is not a part of a claim transaction (begin; [pause D;] [S pause to just after its lease ends;] claim [lease D]; [pause D;] [pause to just after its lease ends;] [complete it;] commit or rollback)", part)
		}
	}
	if !claimed {
		return nil, fmt.Errorf("a claim transaction claims")
	}
	return o, nil
}

var sessionWord = regexp.MustCompile(`^([a-z]+\d+) (.+)$`)

// ParseOp reads one operation as String prints it.
func ParseOp(line string) (Op, error) {
	line = strings.Join(strings.Fields(line), " ")
	bodies := []struct{ s, body string }{{"", line}}
	if m := sessionWord.FindStringSubmatch(line); m != nil {
		bodies = append([]struct{ s, body string }{{m[1], m[2]}}, bodies...)
	}
	for _, b := range bodies {
		for _, g := range grammar {
			m := g.re.FindStringSubmatch(b.body)
			if m == nil {
				continue
			}
			op, err := g.build(b.s, m[1:])
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			// Every operation reads back from exactly what it prints; a line that means the
			// same but prints otherwise (a short lease of another length) is not one.
			if got := op.String(); got != line {
				return nil, fmt.Errorf("%q is not an operation this suite prints (did you mean %q?)", line, got)
			}
			return op, nil
		}
	}
	return nil, fmt.Errorf("%q is not an operation (expected e.g. \"enqueue 2\", \"w0 claim\", \"w1 complete newest-1\", \"expire job 3\", \"s1 begin\", \"locker0 lock job 1\", \"s2 commit\", \"locker0 interrupt\")", line)
}

// Program is a saved program: its operations and its header.
type Program struct {
	Header map[string]string
	Ops    []Op
}

// Header keys.
const (
	HeaderMode     = "mode"
	HeaderSessions = "sessions" // scheduled programs: how many sessions
	HeaderQueue    = "queue"    // the queue it was found on: information, not its target
	HeaderVerdict  = "verdict"
	HeaderProperty = "property" // the number of the property the verdict names
	HeaderMutant   = "mutant"   // a mutant's corpus entry: the mutant it must keep catching
	HeaderBug      = "bug"
)

// SetVerdict records the verdict a program was saved with.
func (p *Program) SetVerdict(v *model.Violation) {
	p.Header[HeaderVerdict] = v.Error()
	p.Header[HeaderProperty] = strconv.Itoa(int(v.Property))
}

// Property is the property the program's saved verdict names.
func (p *Program) Property() (model.Property, bool) {
	n, err := strconv.Atoi(p.Header[HeaderProperty])
	return model.Property(n), err == nil
}

// Mode is the program's mode (sequential unless its header says otherwise).
func (p *Program) Mode() Mode {
	if m := Mode(p.Header[HeaderMode]); m != "" {
		return m
	}
	return Sequential
}

// Parse reads a program file.
func Parse(text string) (*Program, error) {
	p := &Program{Header: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "#"), ":"); strings.HasPrefix(line, "#") && ok {
			p.Header[strings.TrimSpace(k)] = strings.TrimSpace(v)
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, err := ParseOp(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		p.Ops = append(p.Ops, op)
	}
	switch p.Mode() {
	case Sequential, Scheduled:
	default:
		return nil, fmt.Errorf("mode %q: a program is sequential or scheduled", p.Header[HeaderMode])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return p, p.checkSessions()
}

// MaxScheduledSessions bounds a scheduled program's sessions (s0, s1, ...): each is a
// connection of its own.
const MaxScheduledSessions = 8

// ScheduledSession is the name of a scheduled program's session i.
func ScheduledSession(i int) string { return fmt.Sprintf("s%d", i) }

// ScheduledSessions is how many sessions a scheduled program runs: its header's count, else
// enough for the highest session its lines name (at least two), at most MaxScheduledSessions.
func (p *Program) ScheduledSessions() int {
	if n, err := strconv.Atoi(p.Header[HeaderSessions]); err == nil && n > 0 {
		return n
	}
	n := 2
	for _, op := range p.Ops {
		m := sessionWord.FindStringSubmatch(op.String())
		if m == nil || !strings.HasPrefix(m[1], "s") {
			continue
		}
		if i, err := strconv.Atoi(m[1][1:]); err == nil && i+1 > n {
			n = i + 1
		}
	}
	return min(n, MaxScheduledSessions)
}

// checkSessions refuses a line whose session the program's world does not have: it would
// never apply, and the program would silently mean less than it says.
func (p *Program) checkSessions() error {
	known := map[string]bool{Reader: true}
	for i := 0; i < Workers; i++ {
		known[WorkerName(i)] = true
	}
	for i := 0; i < Lockers; i++ {
		known[LockerName(i)] = true
	}
	want := fmt.Sprintf("a sequential program's sessions are %s, w0 to w%d and locker0 to locker%d (a scheduled program says \"# mode: scheduled\")", Reader, Workers-1, Lockers-1)
	if p.Mode() == Scheduled {
		n := MaxScheduledSessions
		if h, err := strconv.Atoi(p.Header[HeaderSessions]); err == nil {
			n = h
		}
		if n < 1 || n > MaxScheduledSessions {
			return fmt.Errorf("sessions: %s; a scheduled program has 1 to %d", p.Header[HeaderSessions], MaxScheduledSessions)
		}
		known = map[string]bool{}
		for i := 0; i < n; i++ {
			known[ScheduledSession(i)] = true
		}
		want = fmt.Sprintf("this scheduled program's sessions are s0 to s%d", n-1)
	}
	for i, op := range p.Ops {
		if m := sessionWord.FindStringSubmatch(op.String()); m != nil && !known[m[1]] {
			return fmt.Errorf("operation %d (%q) runs on session %s, but %s", i+1, op, m[1], want)
		}
	}
	return nil
}

// ReadFile reads a program file.
func ReadFile(path string) (*Program, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return p, nil
}

// Format writes a program file: the header (sorted keys), then one operation per line.
func (p *Program) Format() string {
	var b strings.Builder
	keys := make([]string, 0, len(p.Header))
	for k := range p.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "# %s: %s\n", k, textfmt.OneLine(p.Header[k]))
	}
	b.WriteString(p.Body())
	return b.String()
}

// Body is the program's operations, one per line.
func (p *Program) Body() string {
	var b strings.Builder
	for _, op := range p.Ops {
		b.WriteString(op.String() + "\n")
	}
	return b.String()
}

// FoundDir is where saved failures live, relative to the module root; TestPropPrograms replays
// every program in testdata/programs/*/.
var FoundDir = filepath.Join("testdata", "programs", "found")

// SafeName turns a name into something safe in a file name.
func SafeName(name string) string {
	return strings.Trim(unsafeName.ReplaceAllString(name, "_"), "_")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// Save writes a program into dir as <name>-<hash of its operations>.ops, unless a program with
// the same mode and operations is already there (a replayed failure is not a new one): then it
// returns that file's path and fresh=false.
func Save(dir, name string, p *Program) (path string, fresh bool, err error) {
	key := string(p.Mode()) + "\n" + p.Body()
	old, _ := filepath.Glob(filepath.Join(dir, "*.ops"))
	for _, o := range old {
		if q, err := ReadFile(o); err == nil && string(q.Mode())+"\n"+q.Body() == key {
			return o, false, nil
		}
	}
	sum := sha256.Sum256([]byte(key))
	path = filepath.Join(dir, SafeName(name)+"-"+hex.EncodeToString(sum[:5])+".ops")
	return path, true, p.WriteFile(path)
}

// WriteFile saves the program as path, creating its folder.
func (p *Program) WriteFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(p.Format()), 0o644)
}
