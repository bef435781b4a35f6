package timeline

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EnvRequireChromium makes a missing Chromium fail the rendering test instead of skipping it.
// CI sets it (so does CI=true, which CI runners export), and .ci/run installs the browser.
const EnvRequireChromium = "PGQCHECK_REQUIRE_CHROMIUM"

// chromium finds the browser. Without one the test skips, saying how to run it, unless the
// environment demands the browser.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(EnvRequireChromium) == "" && os.Getenv("CI") != "true" {
		t.Skipf("chromium is not installed: apt-get install -y chromium to check the page's rendering")
	}
	t.Fatalf("chromium is not installed, and %s or CI=true requires it: apt-get install -y chromium", EnvRequireChromium)
	return ""
}

// headless runs one headless Chromium command on page with a profile folder of its own, and
// returns its standard output. Chromium starts helpers in process groups of their own (a
// crash handler, the browser itself under the launcher), so what is stopped when it returns
// is this process's whole tree of descendants: its orphans are this process's children (see
// subreaper), killed and reaped until none is left, also when the browser hangs, the test
// fails or an interrupt arrives, and then the profile is removed (t.TempDir).
func headless(t *testing.T, bin, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	profile := t.TempDir()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--disable-crash-reporter", "--disable-breakpad", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--user-data-dir=" + profile}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	subreaper(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A Ctrl-C reaches this process's group, not the browser's: stop the tree, then exit.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			stopTree()
			os.RemoveAll(filepath.Dir(profile)) // the test's temporary folders: exiting skips its cleanup
			fmt.Fprintf(os.Stderr, "timeline: %v while chromium ran; its processes and profile were removed\n", s)
			os.Exit(1)
		case <-done:
		}
	}()
	defer func() {
		close(done)
		signal.Stop(sig)
		if left := stopTree(); len(left) > 0 {
			t.Errorf("chromium's processes %v are still alive after SIGKILL", left)
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s %s: %v (%v)\n%s", filepath.Base(bin), strings.Join(args, " "), err, ctx.Err(), lastLines(errb.String(), 10))
	}
	return out.Bytes()
}

// subreaper makes this process the parent of its descendants' orphans, so that the
// browser's helpers, once their parent is gone, are stopped and reaped here rather than left
// running, or as zombies under a container's init that may never wait for them.
func subreaper(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Logf("prctl(PR_SET_CHILD_SUBREAPER): %v; orphaned helpers go to init", errno)
	}
}

// stopTree kills every descendant of this process and reaps its children until none is left
// (for up to 5 s), and returns those still there. Only the rendering test starts processes in
// this package's test binary, so every descendant is the browser's.
func stopTree() []int {
	var left []int
	for i := 0; i < 200; i++ {
		left = descendants(os.Getpid())
		if len(left) == 0 {
			return nil
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil) // only our children; others are reparented first
		}
		time.Sleep(25 * time.Millisecond)
	}
	return left
}

// descendants lists the processes, zombies included, below pid.
func descendants(pid int) []int {
	children := map[int][]int{}
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses: state, ppid.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		self, err1 := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		parent, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil {
			children[parent] = append(children[parent], self)
		}
	}
	var out []int
	for queue := children[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, children[queue[0]]...)
	}
	return out
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// TestPageRendersInChromium renders the handmade run's page in headless Chromium and checks
// the page as it was drawn: the script ran and found every fault window in the DOM, and in a
// screenshot each fault's shading covers, in its own colour, the x range its times give.
func TestPageRendersInChromium(t *testing.T) {
	bin := chromium(t)
	r := handmade()
	m := Compute(r, 0)
	dir := t.TempDir()
	page := filepath.Join(dir, "measures.html")
	if err := WriteFile(page, r, m); err != nil {
		t.Fatal(err)
	}

	dom := string(headless(t, bin, page, "--dump-dom"))
	// The script counts the fault rectangles it finds: one per window per chart.
	if want := fmt.Sprintf(`data-ready="%d"`, 3*len(m.Faults)); !strings.Contains(dom, want) {
		t.Errorf("the rendered DOM has no %s: the page's script did not run to its end\n%s", want, lastLines(dom, 5))
	}
	for _, want := range []string{`id="measures-table"`, `id="kinds-table"`, `id="faults-table"`, "claim latency", "p50 4.00 ms, p99 10.0 ms", "1 of 2"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered DOM lacks %q", want)
		}
	}
	if n := len(regexp.MustCompile(`<svg class="chart"`).FindAllString(dom, -1)); n != 4 {
		t.Errorf("the rendered DOM has %d charts, want 4 (fault lane, throughput, latency, jobs)", n)
	}

	shot := filepath.Join(dir, "measures.png")
	headless(t, bin, page, "--window-size=1100,1000", "--screenshot="+shot)
	img := decodePNG(t, shot)
	if keep := os.Getenv("PGQCHECK_KEEP_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		if err := os.WriteFile(keep, b, 0o644); err != nil {
			t.Error(err)
		}
	}
	colours := m.FaultColours()
	for _, w := range m.Faults {
		from, to := shaded(img, colours[w.Kind])
		x0, x1 := m.X(w.From), m.X(w.To)
		t.Logf("%s on %s: shaded from x=%d to x=%d, expected %.1f to %.1f", w.Kind, w.Target, from, to, x0, x1)
		if from < 0 {
			t.Errorf("%s window: no column of the screenshot is shaded %s", w.Kind, colours[w.Kind])
			continue
		}
		if abs(float64(from)-x0) > 2 || abs(float64(to)-x1) > 2 {
			t.Errorf("%s window: shaded from x=%d to x=%d, want %.0f to %.0f (±2 px)", w.Kind, from, to, x0, x1)
		}
	}
}

// shaded returns the first and last screenshot columns in which at least 100 pixels have the
// colour hex (only a chart's fault shading is that tall; legend swatches are 10 px), or -1, -1.
func shaded(img image.Image, hex string) (int, int) {
	want := parseHex(hex)
	b := img.Bounds()
	from, to := -1, -1
	for x := b.Min.X; x < b.Max.X; x++ {
		n := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			got := [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
			if near(got, want) {
				n++
			}
		}
		if n >= 100 {
			if from < 0 {
				from = x
			}
			to = x
		}
	}
	return from, to
}

func parseHex(s string) [3]int {
	v, _ := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	return [3]int{int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)}
}

func near(a, b [3]int) bool {
	for i := range a {
		if d := a[i] - b[i]; d > 3 || d < -3 {
			return false
		}
	}
	return true
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	return img
}
