#!/usr/bin/env bash
# test-times.sh [TREE] [GO TEST ARGS...]: where a default `go test ./...` spends its time. Runs
# `go test -count=1 -v ./...` (plus GO TEST ARGS) in TREE (default: this checkout) and prints a
# Markdown table: the whole run's wall time, each package's, and each top-level test's, with its
# share of its package's time. Parallel tests overlap, so a package's shares may add up to more
# than 100 %; a test whose subtests run side by side is given its longest subtest's time.
# Pointed at an older checkout, it gives the "before" of a change in the same session.
set -euo pipefail
tree="${1:-$(dirname "$0")/..}"
shift || true
cd "$tree" || { echo "test-times: no such tree: $tree; pass a checkout of pgqcheck" >&2; exit 2; }
[ -f go.mod ] || { echo "test-times: $tree holds no go.mod; pass the root of a pgqcheck checkout" >&2; exit 2; }
export PATH="$PATH:/usr/local/go/bin"
go test -count=1 -run '^$' ./... >/dev/null # builds first: the table times tests, not the compiler

log="$(mktemp /tmp/pgqcheck-test-times.XXXXXX)"
trap 'rm -f "$log"' EXIT
begin=$(date +%s%N)
status=0
go test -count=1 -v "$@" ./... >"$log" 2>&1 || status=$?
end=$(date +%s%N)

# go test buffers each package's output when it runs several: a package's tests come as one
# block, ended by its "ok" (or "FAIL") line, which names it.
awk -v wall="$(((end - begin) / 1000000))" -v rev="$(git rev-parse --short HEAD 2>/dev/null || echo '?')" '
/^--- (PASS|FAIL|SKIP): [^ ]+ \([0-9.]+s\)$/ {
	name = $3; t = $4; gsub(/[()s]/, "", t)
	n++; tname[n] = name; ttime[n] = t; tres[n] = $2; sub(/:$/, "", tres[n]); idx[name] = n
	next
}
# A parent whose subtests run side by side ends before they do: its time is its longest
# subtest'"'"'s, which the parent'"'"'s own line, printed before them, does not include.
/^    --- (PASS|FAIL|SKIP): [^ ]+ \([0-9.]+s\)$/ {
	name = $3; t = $4; gsub(/[()s]/, "", t); sub(/\/.*/, "", name)
	if ((name in idx) && t + 0 > ttime[idx[name]] + 0) { ttime[idx[name]] = t; side[idx[name]] = 1 }
	next
}
/^(ok|FAIL)[ \t]+[^ \t]+[ \t]+[0-9.]+s/ {
	pkg = $2; pt = $3; sub(/s$/, "", pt)
	for (i = first + 1; i <= n; i++) tpkg[i] = pkg
	first = n
	delete idx
	npk++; pname[npk] = pkg; ptime[pkg] = pt
}
END {
	printf "`go test ./...` at %s: %.1f s wall\n\n", rev, wall / 1000
	print "| package | package time | test | test time | share of package |"
	print "|---|---:|---|---:|---:|"
	for (p = 1; p <= npk; p++) {
		pk = pname[p]
		if (ptime[pk] + 0 < 0.5) continue
		# the package row, then its tests, longest first (selection sort: a handful of tests)
		printf "| %s | %.1f s | | | |\n", pk, ptime[pk]
		delete done
		while (1) {
			best = 0
			for (i = 1; i <= n; i++) if (tpkg[i] == pk && !done[i] && (best == 0 || ttime[i] + 0 > ttime[best] + 0)) best = i
			if (best == 0 || ttime[best] + 0 < 0.1) break
			done[best] = 1
			share = ptime[pk] > 0 ? 100 * ttime[best] / ptime[pk] : 0
			note = tres[best] == "PASS" ? "" : " (" tres[best] ")"
			if (side[best]) note = note " (its longest subtest; they run side by side)"
			printf "| | | %s%s | %.1f s | %.0f %% |\n", tname[best], note, ttime[best], share
		}
	}
}' "$log"
if [ "$status" != 0 ]; then
	echo
	echo "test-times: go test failed (exit $status); its output:" >&2
	grep -E '^(--- FAIL|FAIL)' "$log" >&2 || true
	exit "$status"
fi
