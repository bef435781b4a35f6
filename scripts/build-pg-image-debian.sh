#!/usr/bin/env bash
# Builds a local Docker image of PostgreSQL from Debian's package archive,
# without pulling anything from any image registry.
#
#   bash scripts/build-pg-image.sh --from-debian VERSION [TAG]   (run as root)
#   bash scripts/build-pg-image-debian.sh VERSION [TAG]          (the same)
#
# VERSION is 18.6 (postgresql-18 from the suite forky) or 17 (postgresql-17
# from trixie); another VERSION needs PG_SUITE. A VERSION with a minor part
# must match the package's version exactly. TAG defaults to
# pgqcheck/postgres:VERSION.
#
# The suite is debootstrapped (--variant=minbase --include=postgresql-N) into
# a temporary folder, from the Debian mirror named in this machine's apt
# sources (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list or *.sources;
# the first one that serves the suite), or from $MIRROR if set. The machine's
# apt sources are only read. The tree is then trimmed (docs, man pages,
# locales, apt's lists and caches, perl modules, the cluster the package
# created), its postgres user gets uid/gid 999, docker/entrypoint.sh becomes
# /entrypoint.sh, and it is imported with `docker import`.
#
# The image is labelled with a build id (VERSION, suite, this script and the
# entrypoint): when TAG already carries it, nothing is done. FORCE=1
# rebuilds; SKIP_SMOKE=1 skips the start-up check of the new image. On any
# failure the temporary folder is removed and no image is left tagged.
set -euo pipefail

die() {
	echo "build-pg-image: $*" >&2
	exit 1
}
# shellcheck source=scripts/image-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh"

VERSION="${1:-}"
[ -n "$VERSION" ] || die "usage: bash scripts/build-pg-image.sh --from-debian VERSION [TAG] (VERSION: 18.6 or 17)"
MAJOR="${VERSION%%.*}"
case "$MAJOR" in
'' | *[!0-9]*) die "VERSION $VERSION is not a PostgreSQL version like 18.6 or 17" ;;
esac
TAG="${2:-pgqcheck/postgres:$VERSION}"
PACKAGE="postgresql-$MAJOR"
if [ -z "${PG_SUITE:-}" ]; then
	case "$MAJOR" in
	18) PG_SUITE=forky ;;
	17) PG_SUITE=trixie ;;
	15) PG_SUITE=bookworm ;;
	*) die "no Debian suite known to carry $PACKAGE; set PG_SUITE=<suite>" ;;
	esac
fi
SUITE="$PG_SUITE"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENTRYPOINT="$REPO/docker/entrypoint.sh"
PG_UID=999

refuse_official_tag "$TAG" "pgqcheck/postgres:$VERSION"
[ "$(id -u)" = 0 ] || die "run me as root (debootstrap and the image's file owners need it)"
[ -f "$ENTRYPOINT" ] || die "$ENTRYPOINT not found"
need_docker

arch="$(dpkg --print-architecture 2>/dev/null || uname -m)"
id="$(build_id "$VERSION $SUITE $PACKAGE $arch")"
exit_if_up_to_date "$TAG" "$id"

# debootstrap: install it when missing (Debian's package of that name).
if ! command -v debootstrap >/dev/null; then
	echo "build-pg-image: installing debootstrap"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1; then
		apt-get update -qq >/dev/null 2>&1 || true
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null 2>&1 ||
			die "debootstrap is not installed and apt-get install debootstrap failed; install the Debian package debootstrap"
	fi
fi
command -v debootstrap >/dev/null || die "debootstrap not found; install the Debian package debootstrap"
scripts_dir=/usr/share/debootstrap/scripts
script="$scripts_dir/$SUITE"
# Older debootstraps have no script for newer suites; sid's fits them.
[ -e "$script" ] || script="$scripts_dir/sid"
[ -e "$script" ] || die "debootstrap has neither a $SUITE nor a sid script in $scripts_dir"

fetch() { # URL: prints the document, fails fast when nobody answers
	if command -v wget >/dev/null; then
		wget -q -T 15 -t 2 -O - "$1"
	else
		curl -fsS --max-time 30 "$1"
	fi
}

# Mirror candidates from the machine's apt sources, in order: URIs of "deb"
# entries with the main component, one-line (*.list) and deb822 (*.sources).
apt_uris() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '
			$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
				uri = $i; main = 0
				for (j = i + 2; j <= NF && $j !~ /^#/; j++) if ($j == "main") main = 1
				if (main) print uri
			}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
			function flush() {
				if (deb && main && enabled) { n = split(uris, u, " "); for (k = 1; k <= n; k++) print u[k] }
				deb = 0; main = 0; enabled = 1; uris = ""
			}
			BEGIN { enabled = 1 }
			/^[ \t]*$/ { flush(); next }
			/^#/ { next }
			{
				key = tolower($1); sub(/:$/, "", key); $1 = ""
				if (key == "types") deb = ($0 ~ /(^|[ \t])deb([ \t]|$)/)
				else if (key == "uris") uris = $0
				else if (key == "components") main = ($0 ~ /(^|[ \t])main([ \t]|$)/)
				else if (key == "enabled") enabled = ($0 !~ /[Nn]o/)
			}
			END { flush() }' "$f"
	done
}

if [ -n "${MIRROR:-}" ]; then
	candidates=("$MIRROR")
else
	mapfile -t candidates < <(apt_uris | grep -E '^https?://' | awk '!seen[$0]++')
	[ "${#candidates[@]}" -gt 0 ] || die "no http(s) Debian mirror with the main component in /etc/apt/sources.list or /etc/apt/sources.list.d/; set MIRROR=<mirror URL>"
fi
mirror=
for m in "${candidates[@]}"; do
	m="${m%/}"
	release="$(fetch "$m/dists/$SUITE/Release" 2>/dev/null || true)"
	if grep -qE "^(Codename|Suite): $SUITE\$" <<<"$release"; then
		mirror="$m"
		break
	fi
done
[ -n "$mirror" ] || die "no mirror answers for suite $SUITE (tried ${candidates[*]}: no dists/$SUITE/Release); check the network or set MIRROR=<mirror URL>"

work="$(mktemp -d /tmp/pgqcheck-debian.XXXXXX)"
cleanup() {
	# debootstrap mounts proc and sys in the target; a failed run can leave
	# them mounted. Unmount whatever is below the folder before removing it.
	local mp
	awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r | while read -r mp; do
		umount -l "$mp" 2>/dev/null || true
	done
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
root="$work/rootfs"

echo "build-pg-image: debootstrapping $SUITE with $PACKAGE (script $(basename "$script"))"
begin=$SECONDS
if ! debootstrap --variant=minbase --include="$PACKAGE" "$SUITE" "$root" "$mirror" "$script" >"$work/debootstrap.log" 2>&1; then
	why="$(grep -E '^(E|W): ' "$work/debootstrap.log" | tail -n 2 | tr '\n' ' ')"
	[ -n "$why" ] || why="$(tail -n 2 "$work/debootstrap.log" | tr '\n' ' ')"
	die "debootstrap of $SUITE failed: ${why% }"
fi
echo "build-pg-image: debootstrap took $((SECONDS - begin)) s"

pkg_version="$(chroot "$root" dpkg-query -W -f '${Version}' "$PACKAGE" 2>/dev/null)" ||
	die "$PACKAGE is not installed in the $SUITE tree"
upstream="${pkg_version%%-*}"
case "$VERSION" in
*.*) [ "$upstream" = "$VERSION" ] || die "suite $SUITE carries $PACKAGE $pkg_version, not $VERSION; ask for --from-debian $MAJOR or set PG_SUITE" ;;
esac
PG_HOME="/usr/lib/postgresql/$MAJOR"
for b in postgres initdb pg_isready; do
	[ -x "$root$PG_HOME/bin/$b" ] || die "$PG_HOME/bin/$b is missing from the $SUITE tree"
done

size_before="$(du -sxm "$root" | cut -f1)"

# Trim: nothing the server or the entrypoint needs.
rm -rf --one-file-system \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
	"$root"/usr/share/locale/* "$root"/usr/share/i18n "$root"/usr/share/lintian \
	"$root"/usr/share/bash-completion "$root"/usr/share/zsh \
	"$root"/usr/share/postgresql/"$MAJOR"/man \
	"$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/var/cache/debconf/*-old \
	"$root"/var/log/* \
	"$root"/usr/lib/*-linux-gnu/perl "$root"/usr/share/perl \
	"$root$PG_HOME"/lib/bitcode "$root$PG_HOME"/lib/llvmjit* \
	"$root"/etc/postgresql/"$MAJOR" "$root"/var/lib/postgresql/"$MAJOR"
# The LLVM JIT's libraries (postgresql-17 pulls in libLLVM, ~125 MB, and
# libz3); without llvmjit.so the server runs without JIT.
rm -f "$root"/usr/lib/*-linux-gnu/libLLVM* "$root"/usr/lib/*-linux-gnu/libz3.so*
find "$root/usr/lib/locale" -mindepth 1 -maxdepth 1 ! -name 'C.*' -exec rm -rf {} + 2>/dev/null || true
# Device nodes come from the container runtime.
find "$root/dev" -mindepth 1 -delete 2>/dev/null || true
mkdir -p "$root/var/log" "$root/var/lib/apt/lists/partial" "$root/var/cache/apt/archives/partial"

# The postgres user gets uid/gid 999 (the harness mounts the data folder
# for uid 999), swapping with whoever had 999 before.
old_uid="$(awk -F: '$1 == "postgres" {print $3}' "$root/etc/passwd")"
old_gid="$(awk -F: '$1 == "postgres" {print $3}' "$root/etc/group")"
[ -n "$old_uid" ] && [ -n "$old_gid" ] || die "$PACKAGE created no postgres user in the $SUITE tree"
renumber() { # FILE OLD: postgres gets 999, an entry that had 999 gets OLD
	awk -F: -v OFS=: -v old="$2" -v new="$PG_UID" '
		$1 == "postgres" { $3 = new; if (NF >= 4 && FILENAME ~ /passwd$/) $4 = new }
		$1 != "postgres" && $3 == new { $3 = old }
		$1 != "postgres" && FILENAME ~ /passwd$/ && $4 == new { $4 = "'"$old_gid"'" }
		{ print }' "$1" >"$1.new"
	cat "$1.new" >"$1"
	rm -f "$1.new"
}
if [ "$old_uid" != "$PG_UID" ] || [ "$old_gid" != "$PG_UID" ]; then
	tmp_id=4000000
	find "$root" -xdev -uid "$PG_UID" -exec chown -h "$tmp_id" {} +
	find "$root" -xdev -uid "$old_uid" -exec chown -h "$PG_UID" {} +
	find "$root" -xdev -uid "$tmp_id" -exec chown -h "$old_uid" {} +
	find "$root" -xdev -gid "$PG_UID" -exec chgrp -h "$tmp_id" {} +
	find "$root" -xdev -gid "$old_gid" -exec chgrp -h "$PG_UID" {} +
	find "$root" -xdev -gid "$tmp_id" -exec chgrp -h "$old_gid" {} +
	renumber "$root/etc/passwd" "$old_uid"
	renumber "$root/etc/group" "$old_gid"
fi
mkdir -p "$root/var/lib/postgresql/data" "$root/var/run/postgresql"
chown "$PG_UID:$PG_UID" "$root/var/lib/postgresql" "$root/var/lib/postgresql/data" "$root/var/run/postgresql"
chmod 700 "$root/var/lib/postgresql/data"
chmod 2775 "$root/var/run/postgresql"
install -m 0755 "$ENTRYPOINT" "$root/entrypoint.sh"

# Every program and module of the server must still find its libraries.
chroot "$root" ldd "$PG_HOME/bin/postgres" >/dev/null 2>&1 || die "ldd does not run in the $SUITE tree"
missing="$(chroot "$root" /bin/sh -c 'for f in '"$PG_HOME"'/bin/* '"$PG_HOME"'/lib/*.so; do
	ldd "$f" 2>/dev/null | grep "not found" | sed "s|^|$f: |"
done' | tr -s ' \t\n' ' ')"
[ -z "$missing" ] || die "trimming removed libraries the server needs: $missing"

size_after="$(du -sxm "$root" | cut -f1)"
version="$(chroot --userspec="$PG_UID:$PG_UID" "$root" "$PG_HOME/bin/postgres" --version)" ||
	die "$PG_HOME/bin/postgres does not run as uid $PG_UID in the $SUITE tree"

import_root "$root" "$TAG" "$PG_HOME" "$id" "$version" "pgqcheck.debian=\"$SUITE $PACKAGE $pkg_version\""
echo "build-pg-image: built $TAG ($version, Debian $SUITE $PACKAGE $pkg_version; rootfs ${size_before} MB before trimming, ${size_after} MB after)"
smoke_test "$TAG"
drop_replaced "$TAG"
