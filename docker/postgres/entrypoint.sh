#!/bin/sh
# Creates the cluster, its user and database on first start, then runs the server in the foreground.
set -eu
: "${POSTGRES_USER:=mediafarm}" "${POSTGRES_DB:=mediafarm}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then echo "queue: set POSTGRES_PASSWORD" >&2; exit 2; fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -w -o "-c listen_addresses=''" start >/dev/null
  createdb --username="$POSTGRES_USER" "$POSTGRES_DB"
  pg_ctl -w stop >/dev/null
fi
# A volume whose group Kubernetes set (fsGroup) has its folders group-writable: the server wants its own.
chmod 0700 "$PGDATA"
exec postgres -c listen_addresses='*'
