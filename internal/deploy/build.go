package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/modroot"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
)

// goCommand is the go command that builds worker programs: the one on PATH, else the one of
// the toolchain that built this binary.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("pgqcheck: a deployment run builds its worker programs with the go command, and none is on PATH; install Go or put its bin folder on PATH")
}

// Built is a worker program built for a run, and what building it cost.
type Built struct {
	Path string
	Dir  string // the module it was built in
	Took time.Duration
}

// Programs are the worker programs built for one or more runs, in a temporary folder of their
// own: a campaign's rounds build each program once. Close removes them.
type Programs struct {
	mu    sync.Mutex
	dir   string
	built map[string]Built
}

// NewPrograms makes an empty folder of programs.
func NewPrograms() (*Programs, error) {
	dir, err := scratchDir("pgqcheck-deploy-bin-")
	if err != nil {
		return nil, fmt.Errorf("pgqcheck: a folder for the worker programs: %v", err)
	}
	return &Programs{dir: dir, built: map[string]Built{}}, nil
}

// scratchDir makes a temporary folder that names its owner, after removing the folders of the
// same kind whose owner is gone: a harness killed with SIGKILL cannot remove its own, and the
// next run does.
func scratchDir(prefix string) (string, error) {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
	for _, d := range old {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	return dir, os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// ownerFile names a scratch folder's owner process.
const ownerFile = "owner.pid"

// Close removes the programs.
func (p *Programs) Close() error { return os.RemoveAll(p.dir) }

// Build builds the main package pkg of module (a folder of the pgqcheck module's tree, from its
// root: "." for the core module, "adapters/river047" for one of its own), once; later calls
// return the same program, with the first build's cost.
func (p *Programs) Build(ctx context.Context, module, pkg string) (Built, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := module + " " + pkg
	if b, ok := p.built[key]; ok {
		return b, nil
	}
	b, err := build(ctx, module, pkg, p.dir)
	if err == nil {
		p.built[key] = b
	}
	return b, err
}

// build builds module's main package pkg into dir. The Go build cache makes a rebuild of an
// unchanged program a link.
func build(ctx context.Context, module, pkg, dir string) (Built, error) {
	root, ok := modroot.Here()
	if !ok {
		return Built{}, fmt.Errorf("pgqcheck: a deployment run builds its workers from the pgqcheck module's source, and the working directory is not inside it; run it from a checkout (git clone, then cd into it)")
	}
	gocmd, err := goCommand()
	if err != nil {
		return Built{}, err
	}
	out := filepath.Join(dir, strings.NewReplacer("/", "-", ".", "").Replace(strings.Trim(module+"/"+pkg, "./")))
	start := time.Now()
	cmd := exec.CommandContext(ctx, gocmd, "build", "-o", out, "./"+strings.TrimPrefix(pkg, "./"))
	cmd.Dir = filepath.Join(root, module)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return Built{}, fmt.Errorf("pgqcheck: building the worker %s in %s: %v: %s", pkg, cmd.Dir, err, textfmt.OneLine(stderr.String()))
	}
	return Built{Path: out, Dir: cmd.Dir, Took: time.Since(start)}, nil
}
