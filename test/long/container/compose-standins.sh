#!/usr/bin/env bash
# Stand-ins for the images compose.yaml pulls (docs/deploy.md, "The compose cluster"), for a manual
# `podman-compose up` on a machine that reaches no image registry. Not used by the tests.
#
#   docker.io/library/postgres:17-trixie   Debian's postgresql-17 with a small entrypoint that, like
#                                          the official one, creates POSTGRES_USER / _PASSWORD / _DB
#                                          on an empty PGDATA
#   docker.io/library/nats:2.11-alpine     this machine's nats-server (it is whatever version is
#                                          installed) with busybox's wget for the health check
#
# Both are built on the stand-in base (standin.sh). Then, in a copy of the project with a .env:
#   podman tag localhost/vexil:test localhost/vexil:latest
#   podman-compose --podman-args '--runtime runc --cgroup-manager=cgroupfs' up -d --no-build
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
base=$(bash "$here/standin.sh" | tail -n1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir "$work/pg"
cat >"$work/pg/Containerfile" <<EOF2
FROM $base
RUN mkdir -p /etc/postgresql-common && echo 'create_main_cluster = false' >/etc/postgresql-common/createcluster.conf \\
 && apt-get update && apt-get install -y --no-install-recommends postgresql-17 && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/17/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres"]
EOF2
cat >"$work/pg/entrypoint.sh" <<'EOF2'
#!/bin/sh
set -e
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
if [ "$1" = postgres ]; then
  mkdir -p "$PGDATA" /run/postgresql
  chown -R postgres:postgres "$PGDATA" /run/postgresql
  chmod 700 "$PGDATA"
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" >/tmp/pw && chown postgres /tmp/pw
    as_pg initdb -U "$POSTGRES_USER" --pwfile=/tmp/pw --auth-local=trust --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
    rm -f /tmp/pw
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
    as_pg pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    as_pg psql -q -U "$POSTGRES_USER" -d postgres -c "create database \"$POSTGRES_DB\""
    as_pg pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
fi
exec "$@"
EOF2
chmod +x "$work/pg/entrypoint.sh"
"${PODMAN[@]}" build --pull=never --network=host -t docker.io/library/postgres:17-trixie "$work/pg" >&2

mkdir "$work/nats"
cp "$(command -v nats-server || echo /usr/sbin/nats-server)" "$work/nats/nats-server"
cat >"$work/nats/Containerfile" <<EOF2
FROM $base
RUN apt-get update && apt-get install -y --no-install-recommends busybox && rm -rf /var/lib/apt/lists/* && ln -s /bin/busybox /usr/local/bin/wget
COPY nats-server /usr/local/bin/nats-server
ENTRYPOINT ["nats-server"]
EOF2
"${PODMAN[@]}" build --pull=never --network=host -t docker.io/library/nats:2.11-alpine "$work/nats" >&2
echo "stand-ins: docker.io/library/postgres:17-trixie docker.io/library/nats:2.11-alpine"
