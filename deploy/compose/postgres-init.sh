#!/bin/bash
# PostgreSQL init script of docker-compose.yml (runs once, on an empty data volume):
# one role and one database per Roomtax service. Each role owns its database and
# nothing else, so a service cannot read another's tables (DESIGN.md). Passwords come
# from the environment (REGISTRY_DB_PASSWORD, ...), never from this file.
set -euo pipefail

for svc in registry filing assessment distribution notify; do
  var="${svc^^}_DB_PASSWORD"
  password="${!var:?$var must be set}"
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
    -v svc="$svc" -v db="roomtax_$svc" -v pw="$password" <<'SQL'
SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', :'svc', :'pw')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'svc') \gexec
SELECT format('CREATE DATABASE %I OWNER %I', :'db', :'svc')
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = :'db') \gexec
SELECT format('REVOKE ALL ON DATABASE %I FROM PUBLIC', :'db') \gexec
SQL
  echo "roomtax: role $svc and database roomtax_$svc ready"
done
