#!/usr/bin/env bash
# flake.sh [-n RUNS] [-load BUSY] [-logs DIR] [TREE]: the flake budget. Runs the README's
# `go test ./...` RUNS times in a row (default 20) in TREE (default: this checkout), with BUSY
# CPU-bound loops running beside it the whole time (default: one per core), and prints a
# Markdown table of failures per test: which test failed in how many of the runs, and each run's
# wall time and result. On a correct tree every count must be 0. The output of each failing
# run is kept in DIR (default a fresh /tmp/pgqcheck-flake.* folder), named in the table.
set -euo pipefail
runs=20 busy=$(nproc) logs=""
while [ $# -gt 0 ]; do
	case "$1" in
	-n) runs="$2"; shift 2 ;;
	-load) busy="$2"; shift 2 ;;
	-logs) logs="$2"; shift 2 ;;
	-h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "flake: unknown flag $1; use -n RUNS, -load BUSY, -logs DIR" >&2; exit 2 ;;
	*) break ;;
	esac
done
tree="${1:-$(dirname "$0")/..}"
case "$runs$busy" in *[!0-9]*) echo "flake: -n and -load take whole numbers (got $runs, $busy)" >&2; exit 2 ;; esac
[ "$runs" -ge 1 ] || { echo "flake: -n must be at least 1" >&2; exit 2; }
cd "$tree" 2>/dev/null || { echo "flake: no such tree: $tree; pass a checkout of pgqcheck" >&2; exit 2; }
[ -f go.mod ] || { echo "flake: $tree holds no go.mod; pass the root of a pgqcheck checkout" >&2; exit 2; }
export PATH="$PATH:/usr/local/go/bin"
[ -n "$logs" ] || logs="$(mktemp -d /tmp/pgqcheck-flake.XXXXXX)"
mkdir -p "$logs"

loads=()
stop_load() {
	for p in "${loads[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT TERM
for _ in $(seq 1 "$busy"); do
	(while :; do :; done) &
	loads+=($!)
done

go test -count=1 -run '^$' ./... >/dev/null # builds first: the runs time tests, not the compiler
summary="$logs/summary"
: >"$summary"
failed_runs=0
for i in $(seq 1 "$runs"); do
	log="$logs/run-$i.log"
	begin=$SECONDS
	status=0
	go test -count=1 ./... >"$log" 2>&1 || status=$?
	took=$((SECONDS - begin))
	if [ "$status" = 0 ]; then
		echo "run $i ok ${took}s" >>"$summary"
		rm -f "$log"
	else
		failed_runs=$((failed_runs + 1))
		echo "run $i FAIL ${took}s $log" >>"$summary"
		# The tests that failed (subtests by their full name) and the packages that failed
		# without a test's line (a panic, a timeout, a build failure).
		grep -E '^\s*--- FAIL: ' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | sort -u | sed "s/^/fail $i /" >>"$summary" || true
		grep -E '^FAIL\s+github.com/pgqcheck/pgqcheck' "$log" | awk '{print $2}' | sort -u | sed "s/^/pkg $i /" >>"$summary" || true
	fi
	echo "flake: run $i of $runs: $(grep "^run $i " "$summary" | awk '{print $3, $4}')" >&2
done

rev="$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "flake budget at $rev: $runs runs of \`go test ./...\` beside $busy CPU-bound loop(s) on $(nproc) cores; $failed_runs failed"
echo
echo "| test | runs failed | of |"
echo "|---|---:|---:|"
if grep -q '^fail ' "$summary"; then
	grep '^fail ' "$summary" | awk '{print $3}' | sort | uniq -c | sort -rn | awk -v n="$runs" '{printf "| %s | %d | %d |\n", $2, $1, n}'
else
	echo "| (none) | 0 | $runs |"
fi
echo
echo "| run | result | wall |"
echo "|---:|---|---:|"
awk '/^run /{printf "| %s | %s | %s |\n", $2, ($3 == "FAIL" ? "FAIL (" $5 ")" : "ok"), $4}' "$summary"
[ "$failed_runs" = 0 ]
