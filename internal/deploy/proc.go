package deploy

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// proc is a worker process in a process group of its own, so that a stall, a kill or a stop
// reaches whatever it started too. The kernel kills it if the harness dies (Pdeathsig), from
// an OS thread kept for as long as it runs: Pdeathsig fires when the thread that started the
// child exits, not the process. That covers a harness killed with SIGKILL and one that exits
// on an interrupt (a test binary's interrupt handler stops its servers and exits); a harness
// that stops in order ends its runs, and each run kills what it started.
type proc struct {
	pid  int
	done chan struct{}
	err  error // how it ended, once done is closed
}

// live are the processes running now (what a test counts to find a run that left one).
var live struct {
	mu    sync.Mutex
	procs map[*proc]bool
}

func startProc(path string, args, env []string, dir string, output io.Writer) (*proc, error) {
	p := &proc{done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer close(p.done)
		cmd := exec.Command(path, args...)
		cmd.Env, cmd.Dir = env, dir
		cmd.Stdout, cmd.Stderr = output, output
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		live.mu.Lock()
		if live.procs == nil {
			live.procs = map[*proc]bool{}
		}
		live.procs[p] = true
		live.mu.Unlock()
		started <- nil
		p.err = cmd.Wait()
		live.mu.Lock()
		delete(live.procs, p)
		live.mu.Unlock()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process's group, unless it has ended (its group id may be another's
// by now).
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited() {
		return errExited
	}
	err := syscall.Kill(-p.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return errExited
	}
	return err
}

var errExited = errors.New("the process has exited")

// stall stops the group (SIGSTOP): nothing in it runs until resume.
func (p *proc) stall() error { return p.signal(syscall.SIGSTOP) }

// resume lets a stalled group run again (SIGCONT).
func (p *proc) resume() error { return p.signal(syscall.SIGCONT) }

// killWait bounds the wait for a killed group's leader to be reaped.
const killWait = 10 * time.Second

// kill kills the group with SIGKILL and waits for the process to end.
func (p *proc) kill() {
	_ = p.signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(killWait):
	}
}

// stop asks the process to end (SIGTERM, after a SIGCONT in case it was stalled) and kills it
// if it has not within grace. It reports whether it ended on its own.
func (p *proc) stop(grace time.Duration) bool {
	_ = p.resume()
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		// The leader is gone; anything it started in its group goes with it.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		return true
	case <-time.After(grace):
	}
	p.kill()
	return false
}

// openLog is a worker's output file.
func openLog(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}
