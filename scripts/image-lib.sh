# Shared steps of the image builds (build-pg-image.sh, build-pg-image-debian.sh), sourced by
# both: the tag and engine checks, the build-id cache, the import of a root tree with the
# entrypoint contract, the start-up check, the removal of the image a build replaces.
# Each caller defines die() first.

# IMAGE_LIB is this file, part of every build id: a change here rebuilds every image.
IMAGE_LIB="${BASH_SOURCE[0]}"

# refuse_official_tag TAG HINT: never tag a locally built image as the official one.
refuse_official_tag() {
	case "$1" in
	postgres:* | library/postgres:* | docker.io/postgres:* | docker.io/library/postgres:*)
		die "refusing to tag an image built here as the official $1; pick another tag, e.g. $2"
		;;
	esac
}

need_docker() {
	command -v docker >/dev/null || die "docker CLI not found"
	docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); start Docker first"
}

# build_id WHAT...: a short hash over WHAT, the entrypoint, the calling script and this file.
build_id() {
	{
		echo "$*"
		cat "$ENTRYPOINT" "$0" "$IMAGE_LIB"
	} | sha256sum | cut -c1-16
}

# exit_if_up_to_date TAG ID: a second build of the same inputs is a no-op. Sets old_id, the
# image a new build replaces.
exit_if_up_to_date() {
	local existing
	existing="$(docker image inspect -f '{{ index .Config.Labels "pgqcheck.build" }}' "$1" 2>/dev/null || true)"
	if [ "$existing" = "$2" ] && [ -z "${FORCE:-}" ]; then
		echo "build-pg-image: $1 is up to date ($(docker image inspect -f '{{ index .Config.Labels "pgqcheck.postgres" }}' "$1"))"
		exit 0
	fi
	old_id="$(docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || true)"
}

# import_root ROOT TAG PG_HOME ID VERSION [LABEL=VALUE...]: the tree as an image whose
# entrypoint starts the server as the non-root postgres user (docker/entrypoint.sh).
import_root() {
	local root="$1" tag="$2" home="$3" id="$4" version="$5" l
	shift 5
	local labels=(--change "LABEL pgqcheck.build=$id" --change "LABEL pgqcheck.postgres=\"$version\"")
	for l in "$@"; do labels+=(--change "LABEL $l"); done
	tar --numeric-owner -C "$root" -cf - . |
		docker import \
			--change 'USER postgres' \
			--change 'WORKDIR /var/lib/postgresql' \
			--change "ENV PATH=$home/bin:/usr/local/bin:/usr/bin:/bin" \
			--change 'ENV PGDATA=/var/lib/postgresql/data' \
			--change 'ENV LANG=C' \
			--change 'ENV TZ=UTC' \
			--change 'ENTRYPOINT ["/entrypoint.sh"]' \
			--change 'CMD ["postgres"]' \
			--change 'EXPOSE 5432' \
			"${labels[@]}" \
			- "$tag" >/dev/null || die "docker import of $tag failed"
}

# smoke_test TAG: the new image starts and accepts connections (SKIP_SMOKE=1 skips it); an
# image that does not is removed.
smoke_test() {
	local tag="$1" name="pgqcheck-image-smoke-$$" ok= log
	[ -z "${SKIP_SMOKE:-}" ] || return 0
	if docker run -d --rm --name "$name" -e POSTGRES_PASSWORD=postgres -e POSTGRES_DB=smoke \
		"$tag" postgres -c fsync=off >/dev/null; then
		for _ in $(seq 1 300); do
			if docker exec "$name" pg_isready -q -h 127.0.0.1 -d smoke 2>/dev/null; then
				ok=1
				break
			fi
			sleep 0.1
		done
	fi
	if [ -z "$ok" ]; then
		log="$(docker logs "$name" 2>&1 | tail -n 3 | tr '\n' ' ' || true)"
		docker rm -f "$name" >/dev/null 2>&1 || true
		docker rmi "$tag" >/dev/null 2>&1 || true
		die "the new image $tag did not accept connections within 30 s, removed it (log: ${log% })"
	fi
	docker rm -f "$name" >/dev/null
	echo "build-pg-image: $tag starts and accepts connections"
}

# drop_replaced TAG: removes the image the new build replaced, unless a container still uses it.
drop_replaced() {
	local new_id
	new_id="$(docker image inspect -f '{{.Id}}' "$1")"
	if [ -n "${old_id:-}" ] && [ "$old_id" != "$new_id" ]; then
		docker rmi "$old_id" >/dev/null 2>&1 || true
	fi
}
