#!/usr/bin/env bash
# campaign-table.sh OUT_DIR [RUN FLAGS...]: one `pgqcheck run` campaign per built-in queue, and a
# Markdown table of what each report counted: verdict, stress rounds, operations, outcomes never
# answered, the fault proxy's faults, claims seen waiting behind a row lock and, for crash
# rounds, the server's time down. RUN FLAGS go to every run as they are; QUEUES (default
# "seed subquery split") picks the queues. Each report is kept in OUT_DIR/QUEUE.
#
#   bash scripts/campaign-table.sh /tmp/faults --mode stress --duration 60s --plan-sizes '' --seed 14
#   bash scripts/campaign-table.sh /tmp/crash --mode stress --crash --duration 30s --plan-sizes ''
set -euo pipefail
[ "$#" -ge 1 ] || { echo "campaign-table: usage: campaign-table.sh OUT_DIR [RUN FLAGS...]" >&2; exit 2; }
out="$1"
shift
queues="${QUEUES:-seed subquery split}"
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
command -v jq >/dev/null || { echo "campaign-table: jq not found; install it (Debian: apt-get install jq)" >&2; exit 2; }
mkdir -p "$out"
bin="$(mktemp /tmp/pgqcheck-campaign-table.XXXXXX)"
trap 'rm -f "$bin"' EXIT
go build -o "$bin" ./cmd/pgqcheck

worst=0
rows=()
for q in $queues; do
	rm -rf "${out:?}/$q"
	status=0
	"$bin" run --queue "$q" --report "$out/$q" "$@" >"$out/$q.log" 2>&1 || status=$?
	if [ "$status" -ge 2 ]; then
		echo "campaign-table: pgqcheck run --queue $q failed (exit $status); see $out/$q.log:" >&2
		tail -5 "$out/$q.log" >&2
		exit "$status"
	fi
	[ "$status" -gt "$worst" ] && worst=$status
	report="$(ls "$out/$q"/run-*.json)"
	rows+=("$(jq -r --arg q "$q" '
		def n: . // 0;
		def s: if . < 1 then "\(. * 1000 | round) ms" else "\(. * 10 | round / 10) s" end;
		[ $q, .verdict, (.counts.stress_rounds | n), .ops, (.counts.unknown | n),
		  (.counts.dropped_replies | n), (.counts.cut_connections | n), (.counts.delayed_replies | n),
		  (.counts.stalled_requests | n), (.counts.claim_waits | n),
		  (if .server_crashes then .server_crashes.rounds else "" end),
		  (if .server_crashes and .server_crashes.rounds > 0
		   then "\(.server_crashes.total_down_s / .server_crashes.rounds | s) / \(.server_crashes.longest_down_s | s)"
		   else "" end)
		] | map(tostring) | "| " + join(" | ") + " |"' "$report")")
	server="$(jq -r '"\(.backend), \(.server_version)"' "$report")"
done

args="$(printf ' %q' "$@")"
echo "\`pgqcheck run --queue Q$args\` for Q in $queues, at $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $server"
echo
echo "| queue | verdict | stress rounds | operations | unknown outcomes | dropped replies | cuts | delays | stalls | claim waits | crash rounds | server down, mean / longest |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
printf '%s\n' "${rows[@]}"
exit "$worst"
