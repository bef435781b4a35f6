package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pgqcheck/pgqcheck/internal/modroot"
	"github.com/pgqcheck/pgqcheck/internal/mutant"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

// OnDatabase installs q in a fresh database named after prefix, runs fn on it, and drops it.
func OnDatabase(ctx context.Context, srv *pgserver.Server, prefix string, q *sut.Queue, fn func(in *sut.Installed, db string) error) error {
	db, err := srv.CreateDatabase(ctx, prefix)
	if err != nil {
		return err
	}
	defer db.Drop(context.Background())
	in, err := sut.Install(ctx, db.DSN, q)
	if err != nil {
		return err
	}
	defer in.Close()
	return fn(in, db.Name)
}

// ResolveQueue returns the queue under judgement: the folder dir (named by from, such as
// "--sql-dir", in errors) if given, else the built-in queue name (default the seed). A mistake
// the user can fix is an *InputError naming the fix; a folder that breaks the SQL contract is
// the contract's own one-line error.
func ResolveQueue(dir, from, name string) (*sut.Queue, error) {
	if dir != "" && name != "" {
		return nil, &InputError{fmt.Sprintf("--queue %s and %s %s both name a queue; give one", name, from, dir)}
	}
	if dir == "" {
		if name == "" {
			name = sut.DefaultQueue
		}
		q, err := sut.Named(name)
		if err != nil {
			return nil, &InputError{fmt.Sprintf("no queue %q; use one of %s, or --sql-dir DIR", name, strings.Join(sut.Names(), ", "))}
		}
		return q, nil
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, &InputError{fmt.Sprintf("%s %s cannot be read (%v); pass the folder holding the queue's schema.sql, enqueue.sql, claim.sql, complete.sql, expire.sql and snapshot.sql", from, dir, errors.Unwrap(err))}
	}
	if !st.IsDir() {
		return nil, &InputError{fmt.Sprintf("%s %s is a file; pass the folder that holds the queue's .sql files", from, dir)}
	}
	return sut.LoadDir(dir)
}

// SelectMutants loads the mutants under dir whose folder name matches pattern ("" for all).
func SelectMutants(dir, pattern string) ([]*mutant.Mutant, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, &InputError{fmt.Sprintf("--run %q is not a regular expression (%v)", pattern, err)}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, &InputError{fmt.Sprintf("--dir %s is not a readable folder; pass the folder holding the mutant folders", dir)}
	}
	all, err := mutant.Load(dir)
	if err != nil {
		return nil, err
	}
	var out []*mutant.Mutant
	for _, m := range all {
		if re.MatchString(m.Name) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, &InputError{fmt.Sprintf("no mutant in %s matches --run %q; check the pattern", dir, pattern)}
	}
	return out, nil
}

// WorstVerdict is the verdict of a set of reports: violated if any is, else error if any is.
func WorstVerdict(rs []*Report) string {
	worst := VerdictHeld
	for _, r := range rs {
		switch {
		case r.Verdict == VerdictViolated:
			worst = VerdictViolated
		case r.Verdict == VerdictError && worst == VerdictHeld:
			worst = VerdictError
		}
	}
	return worst
}

// WritableDir creates dir if needed and proves a file can be created in it, so that a long run
// does not end by failing to save its result.
func WritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return PathCause(err)
	}
	f, err := os.CreateTemp(dir, ".pgqcheck-probe-*")
	if err != nil {
		return PathCause(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// CaseRoot is where a campaign keeps its cases: root if given, else the pgqcheck module at or
// above wd; its testdata/ must be writable.
func CaseRoot(root, wd string) (string, error) {
	if root == "" {
		r, ok := modroot.Find(wd)
		if !ok {
			return "", &InputError{"not inside the pgqcheck module, so failing cases would not be where go test replays them; run from the module or pass --corpus DIR"}
		}
		root = r
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		err = WritableDir(filepath.Join(abs, "testdata"))
	}
	if err != nil {
		return "", &InputError{fmt.Sprintf("--corpus %s cannot be written (%v); pass the module root", root, err)}
	}
	return abs, nil
}
