#!/bin/sh
# Runs once, on an empty data directory (docker-entrypoint-initdb.d), as the superuser.
# Two roles and no shared powers:
#   quorum_owner  owns the database and its schema; migrations run as it.
#   quorum_app    what web and worker connect as; `manage.py audit_grants` (run by the migrate
#                 service as quorum_owner) gives it DML everywhere except the audit table, where
#                 it may only INSERT and SELECT. It owns nothing, so it cannot disable triggers.
# The roles' passwords come from secret files (docker/compose.yaml); there are no defaults.
set -eu
owner_password=$(cat "${QUORUM_DB_OWNER_PASSWORD_FILE:?QUORUM_DB_OWNER_PASSWORD_FILE is required}")
app_password=$(cat "${QUORUM_DB_APP_PASSWORD_FILE:?QUORUM_DB_APP_PASSWORD_FILE is required}")
[ -n "$owner_password" ] && [ -n "$app_password" ] || { echo "empty database password" >&2; exit 1; }
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
  -v owner_password="$owner_password" -v app_password="$app_password" <<'SQL'
CREATE ROLE quorum_owner LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD :'owner_password';
CREATE ROLE quorum_app LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD :'app_password';
CREATE DATABASE quorum OWNER quorum_owner;
REVOKE ALL ON DATABASE quorum FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE quorum TO quorum_app;
SQL
# PostgreSQL 15+: the public schema belongs to the database owner and PUBLIC may not create in it.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname quorum <<'SQL'
ALTER SCHEMA public OWNER TO quorum_owner;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO quorum_app;
SQL
