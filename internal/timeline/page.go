package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
)

// The page's geometry, in CSS pixels. The charts sit at the page's left edge (the body has no
// margin), so a time's x on the page is X(t); the rendering test reads pixels there.
const (
	ChartWidth = 1080
	PlotLeft   = 72
	PlotRight  = 24
	PlotWidth  = ChartWidth - PlotLeft - PlotRight
	chartTop   = 14 // room above the plot for the chart's title
	axisRoom   = 34 // below the plot: tick labels and the axis title
)

// X is where time t falls on the page's charts.
func (m *Measures) X(t int64) float64 {
	span := m.End - m.Start
	if span <= 0 {
		return PlotLeft
	}
	return PlotLeft + float64(t-m.Start)/float64(span)*PlotWidth
}

// kindColours and faultColours are fixed palettes: the same kind is the same colour on every
// page. Faults are light and opaque, drawn under the data; kinds are saturated lines.
var (
	kindColours  = map[string]string{"enqueue": "#1f77b4", "claim": "#ff7f0e", "complete": "#2ca02c", "expire": "#9467bd", "snapshot": "#8c564b", "lock": "#e377c2", "unlock": "#7f7f7f"}
	extraColours = []string{"#17becf", "#bcbd22", "#393b79", "#637939"}
	faultPalette = []string{"#f7c4c4", "#f5c6ea", "#fbe2a6", "#cfe8c8", "#d8cff2", "#c6e4f0", "#ececb0", "#e6d3c3"}
)

// FaultColours maps each fault kind on the page to its fill, in sorted kind order.
func (m *Measures) FaultColours() map[string]string {
	var kinds []string
	seen := map[string]bool{}
	for _, w := range m.Faults {
		if !seen[w.Kind] {
			seen[w.Kind] = true
			kinds = append(kinds, w.Kind)
		}
	}
	sort.Strings(kinds)
	out := map[string]string{}
	for i, k := range kinds {
		out[k] = faultPalette[i%len(faultPalette)]
	}
	return out
}

func (m *Measures) kindColour(kind string) string {
	if c, ok := kindColours[kind]; ok {
		return c
	}
	extra := 0
	for _, k := range m.Statements {
		if _, ok := kindColours[k.Name]; ok {
			continue
		}
		if k.Name == kind {
			break
		}
		extra++
	}
	return extraColours[extra%len(extraColours)]
}

// WriteFile writes the run's page to path.
func WriteFile(path string, r *Run, m *Measures) error {
	var b bytes.Buffer
	if err := Write(&b, r, m); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Write writes the run's page: a self-contained HTML file (inline SVG, a little CSS and
// script, nothing fetched) with throughput and latency per operation kind over time, the
// jobs running on an expired lease and waiting ready, every fault window shaded and labelled,
// and the measures as tables.
func Write(w io.Writer, r *Run, m *Measures) error {
	data, err := json.Marshal(m) // escapes <, > and &: safe inside a script element
	if err != nil {
		return err
	}
	p := &page{m: m, fc: m.FaultColours()}
	title := r.Title
	if title == "" {
		title = "run"
	}
	p.f(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%s: measures</title>
<style>
body{margin:0;font:13px/1.4 system-ui,sans-serif;color:#222;background:#fff}
h1,h2,p,.legend,table,.readout{margin-left:12px;margin-right:12px}
h1{font-size:17px;margin-top:10px;margin-bottom:2px} h2{font-size:14px;margin:14px 12px 4px}
svg.chart{display:block} svg text{font:11px system-ui,sans-serif;fill:#333} svg .ctitle{font-weight:bold;font-size:12px}
.grid{stroke:#e4e4e4;stroke-width:1} .axis{stroke:#555;stroke-width:1} .cursor{stroke:#000;stroke-width:1;stroke-dasharray:2 2}
.legend span{display:inline-block;margin:2px 12px 2px 0;cursor:pointer;user-select:none} .legend span.off{opacity:.3}
.sw{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid #999}
.note{margin-top:0;color:#555;font-size:12px} .readout{min-height:18px;font-family:ui-monospace,monospace;font-size:12px;color:#333}
table{border-collapse:collapse;margin-bottom:8px} td,th{border:1px solid #ddd;padding:2px 8px;text-align:right} th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left} #measures-table th{text-align:left} .hidden{display:none}
</style></head><body>
`, esc(title))
	p.f("<h1>%s</h1>\n", esc(title))
	p.f("<p>%s statements (a snapshot of many rows is one) from %s to %s on the run's clock (%s); %d fault window(s). Buckets of %s.</p>\n",
		fmtInt(int64(m.Ops)), m.Duration(0), m.Duration(m.End-m.Start), clockName(m.Clock), len(m.Faults), m.Duration(m.BucketWidth))
	p.legend()
	p.f("<div class=\"readout\" id=\"readout\">Point at a chart to read its bucket.</div>\n")
	p.faultLane()
	p.throughput()
	p.latency()
	p.jobsChart()
	p.tables()
	p.f("<script type=\"application/json\" id=\"measures\">%s</script>\n<script>%s</script>\n</body></html>\n", data, scriptText)
	_, err = w.Write(p.b.Bytes())
	return err
}

type page struct {
	b  bytes.Buffer
	m  *Measures
	fc map[string]string
}

func (p *page) f(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

func clockName(c string) string {
	if c == "logical" {
		return "an event counter: times are events, not seconds"
	}
	return "monotonic time"
}

func (p *page) legend() {
	p.f("<div class=\"legend\" id=\"legend\">")
	for _, k := range p.m.Statements {
		p.f("<span data-kind=\"%s\"><i class=\"sw\" style=\"background:%s\"></i>%s</span>", esc(k.Name), p.m.kindColour(k.Name), esc(k.Name))
	}
	p.f("<span>latency: p50 solid, p99 dashed</span>")
	var fk []string
	for k := range p.fc {
		fk = append(fk, k)
	}
	sort.Strings(fk)
	for _, k := range fk {
		p.f("<span class=\"fault-key\"><i class=\"sw\" style=\"background:%s\"></i>fault: %s</span>", p.fc[k], esc(k))
	}
	p.f("</div>\n")
}

// chart opens a chart's svg of plot height h, shades the fault windows and draws the x grid.
func (p *page) chart(id, title string, h int) {
	p.f("<svg class=\"chart\" id=\"%s\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-plot-top=\"%d\" data-plot-height=\"%d\">\n",
		id, ChartWidth, chartTop+h+axisRoom, ChartWidth, chartTop+h+axisRoom, chartTop, h)
	p.f("<text class=\"ctitle\" x=\"%d\" y=\"11\">%s</text>\n", PlotLeft, esc(title))
	for _, w := range p.m.Faults {
		x0, x1 := p.m.X(w.From), p.m.X(w.To)
		p.f("<rect class=\"fault\" data-kind=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s</title></rect>\n",
			esc(w.Kind), x0, chartTop, max(x1-x0, 2), h, p.fc[w.Kind], esc(p.faultText(w)))
	}
	for _, t := range timeTicks(p.m) {
		x := p.m.X(p.m.Start + t)
		p.f("<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			x, x, chartTop, chartTop+h, x, chartTop+h+13, esc(tickLabel(p.m, t)))
	}
	p.f("<line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/><line class=\"axis\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>\n",
		PlotLeft, PlotLeft+PlotWidth, chartTop+h, chartTop+h, PlotLeft, PlotLeft, chartTop, chartTop+h)
	for _, mk := range p.m.Marks {
		x := p.m.X(mk.At)
		p.f("<line class=\"mark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#333\" stroke-dasharray=\"6 3\"><title>%s</title></line>\n", x, x, chartTop, chartTop+h, esc(mk.Label))
		p.f("<text x=\"%.1f\" y=\"11\" text-anchor=\"end\">%s ▸</text>\n", x-2, esc(textfmt.FirstWord(mk.Label)))
	}
	p.f("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", PlotLeft+PlotWidth/2, chartTop+h+28, esc(timeAxisTitle(p.m)))
}

func (p *page) faultText(w Window) string {
	s := fmt.Sprintf("%s on %s, %s to %s", w.Kind, w.Target, p.m.Duration(w.From-p.m.Start), p.m.Duration(w.To-p.m.Start))
	if w.Derived {
		s += " (until the session's next operation)"
	}
	return s
}

// yAxis draws horizontal grid lines and labels for values vals at heights ys.
func (p *page) yAxis(h int, title string, labels []string, ys []float64) {
	for i, y := range ys {
		p.f("<line class=\"grid\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			PlotLeft, PlotLeft+PlotWidth, y, y, PlotLeft-4, y+4, esc(labels[i]))
	}
	p.f("<text transform=\"translate(14 %d) rotate(-90)\" text-anchor=\"middle\">%s</text>\n", chartTop+h/2, esc(title))
}

// linearAxis draws a linear scale from 0 to top in quarters.
func (p *page) linearAxis(h int, title string, top float64) {
	var labels []string
	var ys []float64
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		labels, ys = append(labels, fmtNum(v)), append(ys, float64(chartTop+h)-float64(h)*v/top)
	}
	p.yAxis(h, title, labels, ys)
}

// faultLane labels the fault windows above the charts, in three staggered rows; a label
// that would overlap the previous one in its row is left to the window's tooltip.
func (p *page) faultLane() {
	const rows, rowH = 3, 14
	h := rows*rowH + 6
	p.f("<svg class=\"chart\" id=\"faults\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", ChartWidth, h, ChartWidth, h)
	p.f("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">faults</text>\n", PlotLeft-4, rowH)
	last := [rows]float64{-1e9, -1e9, -1e9}
	hidden := 0
	for i, w := range p.m.Faults {
		x0, x1 := p.m.X(w.From), p.m.X(w.To)
		row := i % rows
		p.f("<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"4\" fill=\"%s\" stroke=\"#a33\" stroke-width=\".5\"><title>%s</title></rect>\n",
			x0, h-5, max(x1-x0, 2), p.fc[w.Kind], esc(p.faultText(w)))
		label := w.Kind + " " + w.Target
		if x0 < last[row]+4 {
			hidden++
			continue
		}
		p.f("<text class=\"fault-label\" x=\"%.1f\" y=\"%d\">%s</text>\n", x0, (row+1)*rowH-2, esc(label))
		last[row] = x0 + float64(len(label))*6
	}
	p.f("</svg>\n")
	if hidden > 0 {
		p.f("<p class=\"note\">%d of the %d fault windows are not labelled above, for room: point at a window, or see the table of faults.</p>\n", hidden, len(p.m.Faults))
	}
}

func (p *page) throughput() {
	const h = 200
	perSec := p.m.Clock != "logical"
	rate := func(n int) float64 {
		if perSec {
			return float64(n) / (float64(p.m.BucketWidth) / 1e9)
		}
		return float64(n)
	}
	top := 0.0
	for _, k := range p.m.Statements {
		for _, pt := range k.Points {
			top = max(top, rate(pt.Ops))
		}
	}
	top = niceCeil(top)
	title, unit := "throughput per operation kind", "operations per bucket"
	if perSec {
		unit = "operations / s"
	}
	p.chart("throughput", title, h)
	p.linearAxis(h, unit, top)
	for _, k := range p.m.Statements {
		vals := make([]float64, len(k.Points))
		for i, pt := range k.Points {
			vals[i] = rate(pt.Ops)
		}
		p.line(k.Name, "", func(i int) (float64, bool) {
			return float64(chartTop+h) - float64(h)*vals[i]/top, true
		}, len(vals))
		for i, pt := range k.Points {
			if pt.Unknown > 0 {
				x := p.bucketX(i)
				p.f("<path class=\"k-%s unknown\" d=\"M%.1f %d l-4 7 h8 z\" fill=\"%s\"><title>%d %s with no answer</title></path>\n",
					esc(k.Name), x, chartTop+h-7, p.m.kindColour(k.Name), pt.Unknown, esc(k.Name))
			}
		}
	}
	p.f("</svg>\n")
}

func (p *page) latency() {
	const h = 200
	lo, hi := int64(math.MaxInt64), int64(1)
	for _, k := range p.m.Statements {
		for _, pt := range k.Points {
			if pt.Ops > 0 {
				lo, hi = min(lo, max(1, pt.P50)), max(hi, pt.P99)
			}
		}
	}
	if lo > hi {
		lo = 1
	}
	if p.m.Clock != "logical" {
		// Below 10 µs is the recorder's own bookkeeping (a lock released by a fault is recorded
		// as it is seen), not a statement's round trip: such points sit on the floor.
		lo = max(lo, 10*int64(time.Microsecond))
		hi = max(hi, lo*10)
	}
	// A log scale: a lock wait of seconds and a claim of a tenth of a millisecond share it.
	a, b := math.Floor(math.Log10(float64(lo))), math.Ceil(math.Log10(float64(hi)))
	if b <= a {
		b = a + 1
	}
	y := func(v int64) float64 {
		l := max(a, math.Log10(float64(max(v, 1))))
		return float64(chartTop+h) - float64(h)*(l-a)/(b-a)
	}
	p.chart("latency", "latency per operation kind (log scale)", h)
	var labels []string
	var ys []float64
	for e := a; e <= b; e++ {
		v := int64(math.Pow(10, e))
		labels, ys = append(labels, p.m.Duration(v)), append(ys, y(v))
	}
	p.yAxis(h, "latency", labels, ys)
	for _, k := range p.m.Statements {
		pts := k.Points
		p.line(k.Name, "", func(i int) (float64, bool) { return y(pts[i].P50), pts[i].Ops > 0 }, len(pts))
		p.line(k.Name, "5 3", func(i int) (float64, bool) { return y(pts[i].P99), pts[i].Ops > 0 }, len(pts))
	}
	p.f("</svg>\n")
}

func (p *page) jobsChart() {
	const h = 140
	// The scale is the traffic's: a drain expires every lease at once and would flatten it.
	// What is higher is drawn at the top, and the title says so.
	top, all := 1.0, 0
	traffic := max(1, p.m.TrafficBuckets())
	for i := range p.m.ExpiredRunning {
		all = max(all, p.m.ExpiredRunning[i], p.m.ReadyWaiting[i])
		if i < traffic {
			top = max(top, float64(p.m.ExpiredRunning[i]), float64(p.m.ReadyWaiting[i]))
		}
	}
	top = max(4, niceCeil(top)) // whole jobs on every grid line
	title := "jobs: running on an expired lease (red), ready and waiting (teal)"
	if float64(all) > top {
		title += fmt.Sprintf("; after the %s up to %s, off the scale", textfmt.FirstWord(p.m.Marks[0].Label), fmtInt(int64(all)))
	}
	p.chart("jobs", title, h)
	p.linearAxis(h, "jobs", top)
	series := []struct {
		name, colour string
		vals         []int
	}{{"ready", "#138d90", p.m.ReadyWaiting}, {"expired", "#c0392b", p.m.ExpiredRunning}}
	for _, s := range series {
		var d strings.Builder
		for i, v := range s.vals {
			x0 := p.m.X(p.m.Start + int64(i)*p.m.BucketWidth)
			x1 := p.m.X(min(p.m.End, p.m.Start+int64(i+1)*p.m.BucketWidth))
			yv := float64(chartTop+h) - float64(h)*min(1, float64(v)/top)
			if i == 0 {
				fmt.Fprintf(&d, "M%.1f %.1f", x0, yv)
			} else {
				fmt.Fprintf(&d, "V%.1f", yv)
			}
			fmt.Fprintf(&d, "H%.1f", x1)
		}
		p.f("<path class=\"series-%s\" d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\"/>\n", s.name, d.String(), s.colour)
	}
	p.f("</svg>\n")
}

func (p *page) bucketX(i int) float64 {
	mid := p.m.Start + int64(i)*p.m.BucketWidth + p.m.BucketWidth/2
	return p.m.X(min(mid, p.m.End))
}

// line draws one kind's series as polylines through the buckets' centres, broken where a
// bucket has no value; a lone bucket is a dot, since a line through one point shows nothing.
func (p *page) line(kind, dash string, y func(int) (float64, bool), n int) {
	type pt struct{ x, y float64 }
	var segs [][]pt
	var cur []pt
	for i := 0; i <= n; i++ {
		v, ok := 0.0, false
		if i < n {
			v, ok = y(i)
		}
		if ok {
			cur = append(cur, pt{p.bucketX(i), v})
			continue
		}
		if len(cur) > 0 {
			segs, cur = append(segs, cur), nil
		}
	}
	width, extra, r := "1.6", "", "2.5"
	if dash != "" {
		width, extra, r = "1", fmt.Sprintf(" stroke-dasharray=\"%s\"", dash), "1.5"
	}
	colour := p.m.kindColour(kind)
	for _, s := range segs {
		if len(s) == 1 {
			p.f("<circle class=\"k-%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"/>\n", esc(kind), s[0].x, s[0].y, r, colour)
			continue
		}
		var b strings.Builder
		for _, q := range s {
			fmt.Fprintf(&b, "%.1f,%.1f ", q.x, q.y)
		}
		p.f("<polyline class=\"k-%s\" points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s/>\n", esc(kind), strings.TrimSpace(b.String()), colour, width, extra)
	}
}

func (p *page) tables() {
	m := p.m
	d := m.Duration
	p.f("<h2>Measures</h2>\n<table id=\"measures-table\"><tr><th>measure</th><th>value</th><th>how it is counted</th></tr>\n")
	row := func(name, value, how string) {
		p.f("<tr><td>%s</td><td>%s</td><td style=\"text-align:left\">%s</td></tr>\n", esc(name), esc(value), esc(how))
	}
	sum := func(s Summary) string {
		if s.Count == 0 {
			return "none"
		}
		return fmt.Sprintf("p50 %s, p99 %s, max %s (%d)", d(s.P50), d(s.P99), d(s.Max), s.Count)
	}
	row("claim latency", sum(m.ClaimLatency), "claims that came back, call to return")
	row("ready-job age", sum(m.ReadyAge), "claimed jobs, enqueue's return to first claim's return")
	row("jobs never claimed", fmtInt(int64(m.Unclaimed)), "enqueued, and no claim returned them")
	row("expired-running (peak)", fmtInt(int64(m.TrafficExpiredRunningPeak))+m.afterMark(), "running jobs whose lease was over (expired, or a timed lease's length past its claim) and not yet reclaimed")
	att := "none"
	if a := m.Attempts; a.Jobs > 0 {
		var parts []string
		for i, n := range a.ByCount {
			if n > 0 {
				parts = append(parts, fmt.Sprintf("%d×%d", n, i+1))
			}
		}
		att = fmt.Sprintf("mean %.2f, max %d (jobs × claims: %s)", a.Mean, a.Max, strings.Join(parts, ", "))
	}
	row("attempts per job", att, "claims that returned the job")
	row("rejected completions", fmt.Sprintf("%d of %d", m.RejectedCompletions, m.RejectedCompletions+m.Completions), "completions that came back having changed no row")
	if l := m.Life; l.any() {
		row("failures", fmt.Sprintf("%d (%d final)", l.Failures, l.Final), "failures the queue accepted (one row); final: not retryable")
		row("retries", fmtInt(int64(l.Retries)), "claims that took a job again after an accepted failure of it")
		row("dead jobs", fmtInt(int64(l.Dead)), "jobs whose last observation shows them dead")
		row("renewals", fmtInt(int64(l.Renewals)), "renewals accepted: a claim's that changed its row, a heartbeat's per job extended")
		row("scheduled jobs", fmtInt(int64(l.Scheduled)), "jobs enqueued to run later")
		table := "never read"
		if l.InTable >= 0 {
			table = fmt.Sprintf("%d in the business table at its last reading", l.InTable)
		}
		row("effects", fmt.Sprintf("%d committed; %s", l.Effects, table), "business effects written in transactions that committed")
	}
	p.f("</table>\n<h2>Per operation kind</h2>\n<table id=\"kinds-table\"><tr><th>kind</th><th>statements</th><th>no answer</th><th>p50</th><th>p99</th><th>max</th><th>per second</th></tr>\n")
	secs := float64(m.End-m.Start) / 1e9
	for _, k := range m.Statements {
		rate := "-"
		if m.Clock != "logical" && secs > 0 {
			rate = fmtNum(float64(k.Ops-k.Unknown) / secs)
		}
		p.f("<tr><td><i class=\"sw\" style=\"background:%s\"></i>%s</td><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n",
			m.kindColour(k.Name), esc(k.Name), k.Ops, k.Unknown, d(k.Latency.P50), d(k.Latency.P99), d(k.Latency.Max), rate)
	}
	p.f("</table>\n")
	const listed = 200
	p.f("<h2>Faults</h2>\n")
	if len(m.Faults) == 0 {
		p.f("<p>No fault was injected.</p>\n")
		return
	}
	p.f("<table id=\"faults-table\"><tr><th>kind</th><th>target</th><th>from</th><th>to</th></tr>\n")
	for i, w := range m.Faults {
		if i == listed {
			p.f("<tr><td colspan=\"4\">and %d more</td></tr>\n", len(m.Faults)-listed)
			break
		}
		to := d(w.To - m.Start)
		if w.Derived {
			to += " (next operation)"
		}
		p.f("<tr><td><i class=\"sw\" style=\"background:%s\"></i>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>\n", p.fc[w.Kind], esc(w.Kind), esc(w.Target), d(w.From-m.Start), esc(to))
	}
	p.f("</table>\n")
}

// timeTicks are offsets from the start at a round step, about eight of them.
func timeTicks(m *Measures) []int64 {
	span := m.End - m.Start
	if span <= 0 {
		return []int64{0}
	}
	step := int64(niceStep(float64(span) / 8))
	step = max(step, 1)
	var out []int64
	for t := int64(0); t <= span; t += step {
		out = append(out, t)
	}
	return out
}

func tickLabel(m *Measures, t int64) string {
	if m.Clock == "logical" {
		return fmtInt(t)
	}
	return strconv.FormatFloat(float64(t)/1e9, 'f', -1, 64)
}

func timeAxisTitle(m *Measures) string {
	if m.Clock == "logical" {
		return "events since the run began"
	}
	return "seconds since the run began"
}

// niceStep is 1, 2 or 5 times a power of ten, at least x.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, f := range []float64{1, 2, 5, 10} {
		if f*p >= x {
			return f * p
		}
	}
	return 10 * p
}

// niceCeil rounds a chart's top up so that its quarters are round numbers.
func niceCeil(x float64) float64 {
	if x <= 0 {
		return 1
	}
	return 4 * niceStep(x/4)
}

func fmtNum(v float64) string {
	switch {
	case v >= 100 || v == math.Trunc(v):
		return fmtInt(int64(math.Round(v)))
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fmtInt(n int64) string { return textfmt.Thousands(n) }

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e3, 'f', 0, 64) + " µs"
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + " ms"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
}

// script reads the embedded measures: pointing at a chart shows the bucket's values, and a
// kind in the legend hides or shows its lines. It marks the body data-ready once it has run,
// which the rendering test looks for.
const script = `(function(){
var m=JSON.parse(document.getElementById('measures').textContent);
var L=` + "%PL%" + `,W=` + "%PW%" + `,out=document.getElementById('readout');
function fmt(v){if(m.clock==='logical')return v+' ev';if(v<1e6)return (v/1e3).toFixed(0)+' µs';if(v<1e9)return (v/1e6).toFixed(1)+' ms';return (v/1e9).toFixed(2)+' s';}
var n=m.expired_running.length;
document.querySelectorAll('svg.chart').forEach(function(svg){
  var cur=document.createElementNS('http://www.w3.org/2000/svg','line');
  cur.setAttribute('class','cursor hidden');cur.setAttribute('y1',0);cur.setAttribute('y2',svg.getAttribute('height'));svg.appendChild(cur);
  svg.addEventListener('mousemove',function(e){
    var r=svg.getBoundingClientRect(),x=e.clientX-r.left;
    if(x<L||x>L+W){cur.classList.add('hidden');return;}
    var t=(x-L)/W*(m.end-m.start),b=Math.min(n-1,Math.floor(t/m.bucket_width));
    cur.setAttribute('x1',x);cur.setAttribute('x2',x);cur.classList.remove('hidden');
    var s=['t='+fmt(Math.round(t))];
    m.kinds.forEach(function(k){var p=k.points[b];if(p&&p.ops)s.push(k.kind+' '+p.ops+' (p50 '+fmt(p.p50)+', p99 '+fmt(p.p99)+')');});
    s.push('expired-running '+m.expired_running[b],'ready '+m.ready_waiting[b]);
    out.textContent=s.join('  ·  ');
  });
  svg.addEventListener('mouseleave',function(){cur.classList.add('hidden');});
});
document.querySelectorAll('#legend span[data-kind]').forEach(function(el){
  el.addEventListener('click',function(){
    var k=el.getAttribute('data-kind'),off=el.classList.toggle('off');
    document.querySelectorAll('.k-'+CSS.escape(k)).forEach(function(l){l.style.display=off?'none':'';});
  });
});
document.body.setAttribute('data-ready',String(document.querySelectorAll('rect.fault').length));
document.body.setAttribute('data-script-done-ms',String(Math.round(performance.now())));
})();`

// scriptText is the script with the page's geometry filled in: one definition of it.
var scriptText = strings.NewReplacer("%PL%", strconv.Itoa(PlotLeft), "%PW%", strconv.Itoa(PlotWidth)).Replace(script)
