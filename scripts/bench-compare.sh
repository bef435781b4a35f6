#!/usr/bin/env bash
# bench-compare.sh OLD_REV [ROUNDS]: the suite's speed benchmarks on an older tree and on this
# checkout, in one run, taking turns so that both see the same load. It builds the test binaries
# of both trees first (so compiling is not timed), then runs, ROUNDS times (default 3), each
# benchmark on the old tree and then on the new one, and prints a Markdown table: each figure's
# mean over the rounds on each tree and their ratio (new / old; above 1 is faster for a rate).
#
#   bash scripts/bench-compare.sh main
#   bash scripts/bench-compare.sh 9fb5e21 5
#
# The benchmarks: BenchmarkPropSteps (the Prop state machine's operations per second),
# BenchmarkFuzzExec and BenchmarkFuzzScheduledExec (one fuzz worker's sequential and scheduled
# executions per second).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
old="${1:?usage: bench-compare.sh OLD_REV [ROUNDS]: name the revision to compare this checkout with}"
rounds="${2:-3}"
git rev-parse --verify -q "$old^{commit}" >/dev/null || {
	echo "bench-compare: $old is not a revision of this repository; pass a commit, branch or tag" >&2
	exit 2
}

work="$(mktemp -d /tmp/pgqcheck-bench-compare.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/old"
git archive "$old" | tar -x -C "$work/old"

# name package benchmark benchtime
benches=(
	"root . BenchmarkPropSteps 3x"
	"fuzz ./fuzz BenchmarkFuzzExec 20x"
	"sched ./fuzz BenchmarkFuzzScheduledExec 40x"
)
for tree in old new; do
	dir="$PWD"
	[ "$tree" = old ] && dir="$work/old"
	for b in root fuzz; do
		pkg=.
		[ "$b" = fuzz ] && pkg=./fuzz
		(cd "$dir" && go test -c -o "$work/$tree.$b.test" "$pkg") || {
			echo "bench-compare: the $tree tree's $pkg does not build" >&2
			exit 1
		}
	done
done

log="$work/log"
for round in $(seq "$rounds"); do
	for spec in "${benches[@]}"; do
		read -r name pkg bench benchtime <<<"$spec"
		bin="$name"
		[ "$name" = sched ] && bin=fuzz
		for tree in old new; do
			dir="$PWD"
			[ "$tree" = old ] && dir="$work/old"
			out="$(cd "$dir/$pkg" && "$work/$tree.$bin.test" -test.run '^$' -test.bench "^$bench\$" \
				-test.benchtime "$benchtime" 2>&1)" || {
				echo "bench-compare: $bench failed on the $tree tree:" >&2
				echo "$out" >&2
				exit 1
			}
			echo "$out" | awk -v tree="$tree" '/^Benchmark[^ \t]*[ \t]+[0-9]+[ \t]/ {
				name = $1; sub(/-[0-9]+$/, "", name)
				for (i = 3; i + 1 <= NF; i += 2) print tree, name, $(i + 1), $i
			}' >>"$log"
		done
	done
done

awk -v arg="$old" -v old="$(git rev-parse --short "$old")" -v new="$(git rev-parse --short HEAD)" -v rounds="$rounds" \
	-v dirty="$(git status --porcelain --untracked-files=no | grep -q . && echo ' (with uncommitted changes)')" '
{ key = $2 " " $3; if (!(key in seen)) { seen[key] = 1; order[++n] = key }; sum[$1, key] += $4; cnt[$1, key]++ }
END {
	printf "`bash scripts/bench-compare.sh %s %d`: old %s, new %s%s, %d rounds taking turns\n\n", arg, rounds, old, new, dirty, rounds
	print "| benchmark | figure | old | new | new / old |"
	print "|---|---|---:|---:|---:|"
	for (i = 1; i <= n; i++) {
		k = order[i]; split(k, p, " ")
		o = sum["old", k] / cnt["old", k]; w = sum["new", k] / cnt["new", k]
		printf "| `%s` | %s | %.4g | %.4g | %.2f |\n", p[1], p[2], o, w, (o == 0 ? 0 : w / o)
	}
}' "$log"
