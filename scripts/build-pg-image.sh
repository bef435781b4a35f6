#!/usr/bin/env bash
# Builds a local Docker image of PostgreSQL from this machine's own
# PostgreSQL binaries, without pulling anything from any registry.
#
#   bash scripts/build-pg-image.sh [TAG]        (run as root)
#   bash scripts/build-pg-image.sh --from-debian VERSION [TAG]
#
# --from-debian builds from Debian's archive instead (18.6 or 17, see
# scripts/build-pg-image-debian.sh); the rest of this comment is about the
# host's binaries.
#
# TAG defaults to $PGQCHECK_IMAGE, else pgqcheck/postgres:$PG_MAJOR.
# PG_MAJOR (default 15) picks /usr/lib/postgresql/$PG_MAJOR.
# FORCE=1 rebuilds even if the image is up to date; SKIP_SMOKE=1 skips the
# start-up check of the new image.
#
# The rootfs holds /usr/lib/postgresql/$PG_MAJOR (without the LLVM JIT),
# /usr/share/postgresql/$PG_MAJOR, /usr/share/zoneinfo, the shared libraries
# that ldd finds for all of them, dash as /bin/sh and a few coreutils, an
# /etc/passwd with a non-root postgres user (uid 999), and
# docker/entrypoint.sh as /entrypoint.sh. It is then imported with
# `docker import`. Use it with: PGQCHECK_PG=docker PGQCHECK_IMAGE=<TAG>.
set -euo pipefail

if [ "${1:-}" = --from-debian ]; then
	shift
	exec bash "$(dirname "${BASH_SOURCE[0]}")/build-pg-image-debian.sh" "$@"
fi

die() {
	echo "build-pg-image: $*" >&2
	exit 1
}
# shellcheck source=scripts/image-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/image-lib.sh"

PG_MAJOR="${PG_MAJOR:-15}"
TAG="${1:-${PGQCHECK_IMAGE:-pgqcheck/postgres:$PG_MAJOR}}"
PG_HOME="/usr/lib/postgresql/$PG_MAJOR"
PG_SHARE="/usr/share/postgresql/$PG_MAJOR"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENTRYPOINT="$REPO/docker/entrypoint.sh"
PG_UID=999

refuse_official_tag "$TAG" "pgqcheck/postgres:$PG_MAJOR"
[ "$(id -u)" = 0 ] || die "run me as root (the image's files must belong to uid $PG_UID)"
for b in postgres initdb pg_isready; do
	[ -x "$PG_HOME/bin/$b" ] || die "$PG_HOME/bin/$b not found: PostgreSQL $PG_MAJOR server binaries are missing; install them first (Debian: apt-get install -y postgresql-$PG_MAJOR) or set PG_MAJOR"
done
[ -d "$PG_SHARE" ] || die "$PG_SHARE not found: PostgreSQL $PG_MAJOR is incompletely installed"
[ -f "$ENTRYPOINT" ] || die "$ENTRYPOINT not found"
command -v ldd >/dev/null || die "ldd not found (Debian: apt-get install -y libc-bin)"
need_docker

version="$("$PG_HOME/bin/postgres" --version)"
id="$(build_id "$version")"
exit_if_up_to_date "$TAG" "$id"

work="$(mktemp -d /tmp/pgqcheck-image.XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/usr/sbin"
# A merged-/usr layout: whatever path ldd reports, /lib/... or /usr/lib/...,
# lands in one place and resolves in the container.
ln -s usr/bin "$root/bin"
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
ln -s usr/sbin "$root/sbin"

# PostgreSQL itself, minus the LLVM JIT (libLLVM alone is ~100 MB; without
# llvmjit.so the server just runs without JIT).
tar -C / -cf - \
	--exclude="${PG_HOME#/}/lib/bitcode" \
	--exclude="${PG_HOME#/}/lib/llvmjit*" \
	"${PG_HOME#/}" "${PG_SHARE#/}" |
	tar -C "$root" -xf -
if [ -d /usr/share/zoneinfo ]; then
	tar -C / -cf - usr/share/zoneinfo | tar -C "$root" -xf -
fi

# A shell and the few tools the entrypoint uses.
tools=(dash mkdir chmod rm cat id ls)
for t in "${tools[@]}"; do
	p="$(command -v "$t")" || die "$t not found on this machine"
	cp -L "$p" "$root/usr/bin/$t"
done
ln -sf dash "$root/usr/bin/sh"

# Shared libraries of every binary and module.
objects=("$root$PG_HOME"/bin/* "$root$PG_HOME"/lib/*.so)
for t in "${tools[@]}"; do objects+=("$root/usr/bin/$t"); done
libs="$work/libs"
: >"$libs"
for f in "${objects[@]}"; do
	[ -L "$f" ] && continue
	out="$(ldd "$f" 2>&1)" || continue # not dynamic (scripts, data)
	if grep -q 'not found' <<<"$out"; then
		die "$f needs libraries missing on this machine: $(grep 'not found' <<<"$out" | tr -s ' \t\n' ' ')"
	fi
	awk '/=>/ && $3 ~ /^\// {print $3} /^[ \t]*\// {print $1}' <<<"$out" >>"$libs"
done
sort -u "$libs" | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done

# Users, directories, entrypoint.
mkdir -p "$root/etc" "$root/tmp" "$root/var/lib/postgresql/data" "$root/var/run/postgresql" \
	"$root/proc" "$root/sys" "$root/dev"
cat >"$root/etc/passwd" <<EOF
root:x:0:0:root:/root:/bin/sh
postgres:x:$PG_UID:$PG_UID:PostgreSQL:/var/lib/postgresql:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/sh
EOF
cat >"$root/etc/group" <<EOF
root:x:0:
postgres:x:$PG_UID:
nogroup:x:65534:
EOF
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
chmod 1777 "$root/tmp"
chown -R "$PG_UID:$PG_UID" "$root/var/lib/postgresql" "$root/var/run/postgresql"
chmod 700 "$root/var/lib/postgresql/data"
chmod 2775 "$root/var/run/postgresql"
install -m 0755 "$ENTRYPOINT" "$root/entrypoint.sh"

size="$(du -sh "$root" | cut -f1)"
import_root "$root" "$TAG" "$PG_HOME" "$id" "$version"
echo "build-pg-image: built $TAG ($version, rootfs $size)"
smoke_test "$TAG"
drop_replaced "$TAG"
