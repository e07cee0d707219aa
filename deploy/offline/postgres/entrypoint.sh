#!/bin/sh
# First start: a cluster with the POSTGRES_USER role (password login from the network), the
# POSTGRES_DB database and the vector extension; then the server, on every address.
set -e
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pwfile
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 --encoding=utf8
  rm -f /tmp/pwfile
  echo "host all all 0.0.0.0/0 scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -k /run/postgresql" start
  createdb -h /run/postgresql -U "$POSTGRES_USER" "$POSTGRES_DB"
  psql -h /run/postgresql -U "$POSTGRES_USER" -d "$POSTGRES_DB" -c 'CREATE EXTENSION IF NOT EXISTS vector'
  pg_ctl -D "$PGDATA" -w -m fast stop
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -p 5432 -k /run/postgresql -c max_connections=200
