package program

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A program file is one operation per line, exactly as String prints it; '#' starts a comment.
// Header comments of the form "# key: value" carry what the program was found against.

var opSyntax = []struct {
	re    *regexp.Regexp
	build func(n []int) Op
}{
	{regexp.MustCompile(`^enqueue (\d+)$`), func(n []int) Op { return Enqueue{N: n[0]} }},
	{regexp.MustCompile(`^w(\d+) claim$`), func(n []int) Op { return Claim{W: n[0]} }},
	{regexp.MustCompile(`^w(\d+) complete newest$`), func(n []int) Op { return Complete{W: n[0]} }},
	{regexp.MustCompile(`^w(\d+) complete newest-(\d+)$`), func(n []int) Op { return Complete{W: n[0], Back: n[1]} }},
	{regexp.MustCompile(`^w(\d+) pause past lease$`), func(n []int) Op { return Pause{W: n[0]} }},
	{regexp.MustCompile(`^w(\d+) pause past lease, then complete$`), func(n []int) Op { return Overslept{W: n[0]} }},
	{regexp.MustCompile(`^w(\d+) pause past lease, w(\d+) claim, w\d+ complete$`), func(n []int) Op { return Replaced{W: n[0], By: n[1]} }},
	{regexp.MustCompile(`^expire job (\d+)$`), func(n []int) Op { return Expire{Job: int64(n[0])} }},
	{regexp.MustCompile(`^locker(\d+) lock job (\d+)$`), func(n []int) Op { return Lock{L: n[0], Job: int64(n[1])} }},
	{regexp.MustCompile(`^locker(\d+) commit$`), func(n []int) Op { return Release{L: n[0], How: Commit} }},
	{regexp.MustCompile(`^locker(\d+) rollback$`), func(n []int) Op { return Release{L: n[0], How: Rollback} }},
	{regexp.MustCompile(`^locker(\d+) cancel$`), func(n []int) Op { return Release{L: n[0], How: Cancel} }},
	{regexp.MustCompile(`^locker(\d+) terminate$`), func(n []int) Op { return Release{L: n[0], How: Terminate} }},
	{regexp.MustCompile(`^w(\d+) crash$`), func(n []int) Op { return Crash{W: n[0]} }},
	{regexp.MustCompile(`^w(\d+) drain$`), func(n []int) Op { return Drain{W: n[0]} }},
	{regexp.MustCompile(`^w(\d+) claim 1s lease, complete at once$`), func(n []int) Op { return ShortLease{W: n[0]} }},
	{regexp.MustCompile(`^w(\d+) claim 1s lease, pause 1\.5s, complete$`), func(n []int) Op { return ShortLease{W: n[0], Late: true} }},
}

// ParseOp reads one operation as String prints it.
func ParseOp(line string) (Op, error) {
	line = strings.TrimSpace(line)
	for _, s := range opSyntax {
		m := s.re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var n []int
		for _, d := range m[1:] {
			v, err := strconv.Atoi(d)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			n = append(n, v)
		}
		return s.build(n), nil
	}
	return nil, fmt.Errorf("%q is not an operation (expected e.g. \"enqueue 2\", \"w0 claim\", \"w1 complete newest-1\", \"expire job 3\", \"locker0 lock job 1\", \"locker0 cancel\")", line)
}

// Program is a saved program: its operations and its header.
type Program struct {
	Header map[string]string
	Ops    []Op
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
	return p, sc.Err()
}

// Format writes a program file: the header (sorted keys), then one operation per line.
func (p *Program) Format() string {
	var b strings.Builder
	keys := make([]string, 0, len(p.Header))
	for k := range p.Header {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "# %s: %s\n", k, p.Header[k])
	}
	for _, op := range p.Ops {
		b.WriteString(op.String() + "\n")
	}
	return b.String()
}

// FoundDir is where saved failures live, relative to the module root; TestPropPrograms replays
// every program in testdata/programs/*/.
var FoundDir = filepath.Join("testdata", "programs", "found")

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// Save writes the finding's program into dir as <name>-<time>.ops, unless a program with the
// same operations is already there (a replayed failure is not a new one): then it returns that
// file's path and fresh=false.
func Save(dir, name string, f *Finding, header map[string]string) (path string, fresh bool, err error) {
	ops := (&Program{Ops: f.Ops}).Format()
	old, _ := filepath.Glob(filepath.Join(dir, "*.ops"))
	for _, o := range old {
		b, err := os.ReadFile(o)
		if err != nil {
			continue
		}
		if p, err := Parse(string(b)); err == nil && (&Program{Ops: p.Ops}).Format() == ops {
			return o, false, nil
		}
	}
	base := strings.Trim(unsafeName.ReplaceAllString(name, "_"), "_") + "-" + time.Now().UTC().Format("20060102T150405")
	path = filepath.Join(dir, base+".ops")
	for i := 2; fileExists(path); i++ {
		path = filepath.Join(dir, fmt.Sprintf("%s-%d.ops", base, i))
	}
	return path, true, f.Program(header).WriteFile(path)
}

// WriteFile saves the program as path, creating its folder.
func (p *Program) WriteFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(p.Format()), 0o644)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
