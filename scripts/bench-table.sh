#!/usr/bin/env bash
# bench-table.sh [GO TEST ARGS...]: runs the suite's benchmarks and prints their figures as a
# Markdown table, one row per benchmark: its runs (b.N), its time per run and every figure it
# reports (b.ReportMetric). The arguments go to `go test -run '^$'` as they are; without any
# it runs `-bench . -benchtime 3x -timeout 60m ./...`. (-short would leave out the claim cost at
# 1M done rows, but it also divides rapid's checks by five, too few for the mutant hunts.)
#
#   bash scripts/bench-table.sh                                  # every benchmark
#   bash scripts/bench-table.sh -bench MutantCatch -benchtime 1x .
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
if [ "$#" -eq 0 ]; then
	set -- -bench . -benchtime 3x -timeout 60m ./...
fi

log="$(mktemp /tmp/pgqcheck-bench-table.XXXXXX)"
trap 'rm -f "$log"' EXIT
status=0
go test -run '^$' "$@" >"$log" 2>&1 || status=$?
if [ "$status" != 0 ]; then
	echo "bench-table: go test failed (exit $status); its output:" >&2
	cat "$log" >&2
	exit "$status"
fi

awk -v args="$(printf '%q ' "$@" | sed 's/ $//')" -v rev="$(git rev-parse --short HEAD 2>/dev/null || echo '?')" '
function human(ns) {
	if (ns >= 1e9) return sprintf("%.2f s", ns / 1e9)
	if (ns >= 1e6) return sprintf("%.2f ms", ns / 1e6)
	if (ns >= 1e3) return sprintf("%.1f µs", ns / 1e3)
	return sprintf("%d ns", ns)
}
function num(v) {
	if (v == int(v)) return sprintf("%d", v)
	if (v >= 100) return sprintf("%.0f", v)
	if (v >= 1) return sprintf("%.2f", v)
	return sprintf("%.3f", v)
}
/^cpu: / && cpu == "" { cpu = substr($0, 6) }
/^pgqcheck: backend=/ && server == "" { server = $0; sub(/^pgqcheck: /, "", server); sub(/ startup=.*/, "", server) }
/^pkg: / { pkg = $2 }
/^Benchmark[^ \t]*[ \t]+[0-9]+[ \t]/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	figures = ""
	for (i = 3; i + 1 <= NF; i += 2) {
		v = $i; unit = $(i + 1)
		if (unit == "ns/op") { per = human(v); continue }
		figures = figures (figures == "" ? "" : ", ") num(v) " " unit
	}
	n++; row[n] = sprintf("| %s | `%s` | %s | %s | %s |", pkg, name, $2, per, figures)
}
END {
	printf "`go test -run '"'"'^$'"'"' %s` at %s", args, rev
	if (server != "") printf "; %s", server
	if (cpu != "") printf "; cpu: %s", cpu
	printf "\n\n| package | benchmark | runs | time per run | figures |\n|---|---|---:|---:|---|\n"
	for (i = 1; i <= n; i++) print row[i]
}' "$log"
