// Package sut is the system under test: a queue given as SQL files that follow the contract,
// the code that installs it into a database of its own, and a client that runs its
// statements and turns their answers into the model's vocabulary.
//
// The contract is one statement per file (schema.sql may hold many): each file's parameters
// and answer are its line in contractLines, which the errors on a folder quote, and
// docs/contract.md is the reference. Files beyond the core are optional (lock.sql, rescue.sql,
// the lifecycle's fail.sql and renew.sql, effect.sql with effects.sql, reset.sql), as is
// queue.json, what the queue declares about itself (see Declared).
//
// The forms a queue may declare (queue.json, or the presence of a file) change the contract's
// shape only at the edges: the client translates them (opaque ids to numbers in enqueue order,
// claim tokens kept per claim, generations counted by the suite where the queue has none), so
// that the model and every mode keep speaking of (job, generation).
//
// A queue written in Go (GoQueue, Register) is judged as a folder is: each kind is a backend
// that a session runs every operation through, without asking which kind it has, and each
// declares what the model and the modes must know of it in one value (Declared).
package sut

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/model"
)

//go:embed queues
var builtin embed.FS

// DefaultQueue is the built-in queue used when no folder is given: the seed's.
const DefaultQueue = "seed"

// Queue is a queue, loaded and checked for shape, not yet installed anywhere: a folder of SQL
// statements (LoadDir, Builtin) or a queue written in Go (Registered).
type Queue struct {
	Name   string // folder base name, or the built-in's or Go queue's name
	Source string // where it came from, for messages: a path, "built-in seed" or "registered txbound"

	// The folder's statements; a Go queue has none.
	Schema, Enqueue, Claim, Complete, Expire, Snapshot string
	Lock                                               string // "" when the folder has no lock.sql
	Rescue                                             string // "" when the folder has no rescue.sql
	// The lifecycle's statements, "" where the folder lacks them (lifecycle.go).
	Fail, Renew, Effect, Effects, Reset string
	// Extras are the extra statements the folder holds (RegisterExtra), by file.
	Extras map[string]string

	Declared

	// open makes the queue's backend for one installed database.
	open func(*Queue) backend
}

// Statement names, as files.
const (
	FileSchema   = "schema.sql"
	FileEnqueue  = "enqueue.sql"
	FileClaim    = "claim.sql"
	FileComplete = "complete.sql"
	FileExpire   = "expire.sql"
	FileSnapshot = "snapshot.sql"
	FileLock     = "lock.sql"
	FileRescue   = "rescue.sql"
	FileFail     = "fail.sql"
	FileRenew    = "renew.sql"
	FileEffect   = "effect.sql"
	FileEffects  = "effects.sql"
	FileReset    = "reset.sql"
	FileConfig   = "queue.json"
)

// ContractError says which file of a queue folder breaks the contract and what it expects.
type ContractError struct {
	Source, File, Problem string
}

func (e *ContractError) Error() string {
	return fmt.Sprintf("pgqcheck: queue %s: %s: %s", e.Source, e.File, e.Problem)
}

// LoadDir reads a user's queue folder.
func LoadDir(dir string) (*Queue, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: queue folder %s: %v; PGQCHECK_SQL_DIR must name a folder holding schema.sql, enqueue.sql, claim.sql, complete.sql, expire.sql and snapshot.sql", dir, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("pgqcheck: queue folder %s is a file, not a folder; point PGQCHECK_SQL_DIR at the folder holding the queue's .sql files", dir)
	}
	abs, _ := filepath.Abs(dir)
	return load(os.DirFS(dir), filepath.Base(abs), abs)
}

// Builtin returns one of the queues shipped in the binary (see Builtins).
func Builtin(name string) (*Queue, error) {
	sub, err := fs.Sub(builtin, "queues/"+name)
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(sub, FileClaim); err != nil {
		return nil, fmt.Errorf("pgqcheck: no built-in queue %q; choose one of %s", name, strings.Join(Builtins(), ", "))
	}
	return load(sub, name, "built-in "+name)
}

// MustBuiltin is Builtin for names known at compile time.
func MustBuiltin(name string) *Queue {
	q, err := Builtin(name)
	if err != nil {
		panic(err)
	}
	return q
}

// Builtins lists the shipped queues, the seed first.
func Builtins() []string {
	ents, _ := fs.ReadDir(builtin, "queues")
	var out []string
	for _, e := range ents {
		if e.IsDir() && e.Name() != DefaultQueue {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return append([]string{DefaultQueue}, out...)
}

// EnvSQLDir names the variable that replaces the built-in queues with a user's folder.
const EnvSQLDir = "PGQCHECK_SQL_DIR"

// FromEnv returns the user's queue when PGQCHECK_SQL_DIR (a folder) or PGQCHECK_QUEUE (a
// registered Go queue, or a built-in, by name) is set, else nil.
func FromEnv() (*Queue, error) {
	dir, name := os.Getenv(EnvSQLDir), os.Getenv(EnvQueue)
	switch {
	case dir != "" && name != "":
		return nil, fmt.Errorf("pgqcheck: both %s and %s are set; name one queue", EnvSQLDir, EnvQueue)
	case name != "":
		return Named(name)
	case dir != "":
		return LoadDir(dir)
	}
	return nil, nil
}

// Under returns the queues a test suite should judge: the user's folder alone when
// PGQCHECK_SQL_DIR is set (so a run is a verdict on that one queue), else every built-in.
func Under() ([]*Queue, error) {
	q, err := FromEnv()
	if err != nil || q != nil {
		return []*Queue{q}, err
	}
	var out []*Queue
	for _, n := range Builtins() {
		out = append(out, MustBuiltin(n))
	}
	return out, nil
}

// VariantsDir is where, under the module's root, the correct queues of other shapes live
// (token-fenced, rescued, deleted with uuid ids, at-least-once): judged beside the built-ins.
const VariantsDir = "testdata/queues"

// Variants loads every queue folder under root's VariantsDir, by name.
func Variants(root string) ([]*Queue, error) {
	ents, err := os.ReadDir(filepath.Join(root, VariantsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Queue
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		q, err := LoadDir(filepath.Join(root, VariantsDir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

func load(fsys fs.FS, name, source string) (*Queue, error) {
	q := &Queue{Name: name, Source: source, Declared: Declared{Order: model.LowestID}, open: openFolder, Extras: map[string]string{}}
	type file struct {
		file     string
		dst      *string
		optional bool
	}
	files := []file{
		{FileSchema, &q.Schema, false},
		{FileEnqueue, &q.Enqueue, false},
		{FileClaim, &q.Claim, false},
		{FileComplete, &q.Complete, false},
		{FileExpire, &q.Expire, false},
		{FileSnapshot, &q.Snapshot, false},
		{FileLock, &q.Lock, true},
		{FileRescue, &q.Rescue, true},
		{FileFail, &q.Fail, true},
		{FileRenew, &q.Renew, true},
		{FileEffect, &q.Effect, true},
		{FileEffects, &q.Effects, true},
		{FileReset, &q.Reset, true},
	}
	texts := map[string]*string{}
	for _, x := range extras {
		texts[x.File] = new(string)
		files = append(files, file{x.File, texts[x.File], true})
	}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f.file)
		if errors.Is(err, fs.ErrNotExist) && f.optional {
			continue
		}
		if err != nil {
			problem := "cannot be read: " + err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				problem = "missing; the contract needs this file (" + contractLines[f.file] + ")"
			}
			return nil, &ContractError{source, f.file, problem}
		}
		text := strings.TrimSpace(string(b))
		if text == "" {
			return nil, &ContractError{source, f.file, "empty; the contract expects " + contractLines[f.file]}
		}
		if f.file != FileSchema {
			text = strings.TrimSpace(strings.TrimSuffix(text, ";"))
			if strings.Contains(stripComments(text), ";") {
				return nil, &ContractError{source, f.file, "holds more than one statement; only schema.sql may"}
			}
		}
		*f.dst = text
	}
	b, err := fs.ReadFile(fsys, FileConfig)
	var lifeKey string
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, &ContractError{source, FileConfig, "cannot be read: " + err.Error()}
	default:
		if lifeKey, err = q.Declared.declare(b); err != nil {
			return nil, &ContractError{source, FileConfig, err.Error()}
		}
	}
	for file, text := range texts {
		if *text != "" {
			q.Extras[file] = *text
		}
	}
	q.Declared.Shape.Can.Lock, q.Declared.Shape.Can.Rescue = q.Lock != "", q.Rescue != ""
	q.shipsExtras(nil)
	if q.Shape().RescueOnly && !q.Can().Rescue {
		return nil, &ContractError{source, FileRescue, "missing; queue.json declares \"reclaim\": \"rescue\", so the queue needs the step that makes expired jobs ready (" + contractLines[FileRescue] + ")"}
	}
	if err := q.lifecycleFiles(lifeKey); err != nil {
		return nil, err
	}
	return q, nil
}

// configKeys is queue.json's whole vocabulary, for the message that names an unknown key.
const configKeys = `"claim_order", "lease", "generation", "done", "ids", "reclaim", "claims", "promises", ` + lifeKeys

// declare reads queue.json. Every key is optional; each wrong value is one line that names the
// values the key takes. It returns a lifecycle key it declared (see declareLife).
func (d *Declared) declare(b []byte) (string, error) {
	var cfg struct {
		ClaimOrder string          `json:"claim_order"`
		Lease      string          `json:"lease"`
		Generation *bool           `json:"generation"`
		Done       string          `json:"done"`
		IDs        string          `json:"ids"`
		Reclaim    string          `json:"reclaim"`
		Claims     string          `json:"claims"`
		Promises   map[string]bool `json:"promises"`
		lifeConfig
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return "", fmt.Errorf("not valid (%v); it is one JSON object with any of the keys %s", err, configKeys)
	}
	switch model.Order(cfg.ClaimOrder) {
	case model.LowestID, model.Any:
		d.Order = model.Order(cfg.ClaimOrder)
	case "":
	default:
		return "", fmt.Errorf("claim_order %q is unknown; use \"lowest-id\" or \"any\"", cfg.ClaimOrder)
	}
	if cfg.Lease != "" {
		lease, err := time.ParseDuration(cfg.Lease)
		if err != nil || lease <= 0 {
			return "", fmt.Errorf("lease %q is not a positive duration; give the lease the queue fixes itself, as \"30s\" or \"1h\"", cfg.Lease)
		}
		d.FixedLease = lease
	}
	d.Shape.NoGeneration = cfg.Generation != nil && !*cfg.Generation
	switch cfg.Done {
	case "", "kept":
	case "deleted":
		d.Shape.DoneDeleted = true
	default:
		return "", fmt.Errorf("done %q is unknown; use \"kept\" (finished rows stay, in state done) or \"deleted\" (they are deleted or moved away)", cfg.Done)
	}
	switch cfg.IDs {
	case "", "integer":
	case "opaque":
		d.OpaqueIDs = true
	default:
		return "", fmt.Errorf("ids %q is unknown; use \"integer\" (ids ascend with enqueue order) or \"opaque\" (uuid or text)", cfg.IDs)
	}
	switch cfg.Claims {
	case "alone":
		d.ClaimsOutsideTxns = true
	case "", "in-transactions":
	default:
		return "", fmt.Errorf("claims %q is unknown; use \"alone\" (the queue's workers always claim in a statement of its own) or leave it out (a claim may run inside a longer transaction)", cfg.Claims)
	}
	switch cfg.Reclaim {
	case "", "claim":
	case "rescue":
		d.Shape.RescueOnly = true
	default:
		return "", fmt.Errorf("reclaim %q is unknown; use \"claim\" (claim takes jobs whose lease ended) or \"rescue\" (rescue.sql makes them ready first)", cfg.Reclaim)
	}
	for name, promised := range cfg.Promises {
		p, ok := model.PropertyNamed(name)
		switch {
		case !ok:
			return "", fmt.Errorf("promises names %q, which is no property; a queue may leave out \"fencing\"", name)
		case p != model.PFencing && !promised:
			return "", fmt.Errorf("promises leaves out %s; only fencing may be left out (every other promise is what a queue is)", p)
		case p == model.PFencing:
			d.Shape.Unfenced = !promised
		}
	}
	return d.declareLife(cfg.lifeConfig)
}

// stripComments drops -- comments and quoted text, so a semicolon inside them is not taken
// for a second statement.
func stripComments(s string) string {
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote:
			if c == '\'' {
				inQuote = false
			}
		case c == '\'':
			inQuote = true
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// contractLines is each file's contract: its parameters, then what it answers.
var contractLines = map[string]string{
	FileSchema:   "DDL run once in a fresh database",
	FileEnqueue:  "$1 payload (jsonb) -> one row: id",
	FileClaim:    "$1 lease length (interval) -> zero or one row: id, generation",
	FileComplete: "$1 id, $2 generation -> one row, one column: rows completed (0 or 1)",
	FileExpire:   "$1 id -> nothing; moves that job's lease into the past",
	FileSnapshot: "no parameters -> every job: id, state, generation, lease_live (bool), ordered by id",
	FileLock:     "$1 id -> locks that job's row FOR UPDATE",
	FileRescue:   "no parameters -> one row per job it took: id",
	FileFail:     "$1 id, $2 generation (or the claim's tokens), then retryable (boolean), error text -> one row, one column: rows changed (0 or 1)",
	FileRenew:    "$1 id, $2 generation (or the claim's tokens), then the lease (interval) -> one row, one column: rows changed (0 or 1)",
	FileEffect:   "$1 id -> writes that job's business effect, in the completion's transaction",
	FileEffects:  "no parameters -> one row per job with effects: id, count",
	FileReset:    "no parameters -> rebuilds the state the reset's TRUNCATE emptied",
}

// Dir is the queue's folder, or "" for a built-in queue or one written in Go.
func (q *Queue) Dir() string {
	if strings.HasPrefix(q.Source, "built-in ") || strings.HasPrefix(q.Source, goSource) {
		return ""
	}
	return q.Source
}

// Ref names the queue for a saved case: its folder relative to root when it lies inside (so
// the case still resolves in another checkout), else its source as is.
func (q *Queue) Ref(root string) string {
	dir := q.Dir()
	if dir == "" || root == "" {
		return q.Source
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return q.Source
	}
	rel, err := filepath.Rel(absRoot, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return q.Source
	}
	return rel
}

// LoadRef loads a queue named by Ref: a built-in, or a folder relative to root.
func LoadRef(root, ref string) (*Queue, error) {
	if name, ok := strings.CutPrefix(ref, "built-in "); ok {
		return Builtin(name)
	}
	if name, ok := strings.CutPrefix(ref, goSource); ok {
		if q, ok := Registered(name); ok {
			return q, nil
		}
		return nil, fmt.Errorf("pgqcheck: no Go queue %q is registered in this binary", name)
	}
	if !filepath.IsAbs(ref) {
		ref = filepath.Join(root, ref)
	}
	return LoadDir(ref)
}
