#!/usr/bin/env bash
# The whole scaled-out topology on one machine, on loopback: 2 API processes, 2 daemons and
# 3 Celery workers against PostgreSQL and RabbitMQ (see docs/deploy.md). Ctrl+C stops it all.
#
#   scripts/cluster.sh                       # the quick start's example jobs
#   DEFINITIONS=my.module:definitions scripts/cluster.sh
#
# Environment: DATABASE_URL (default: database "backfiller_cluster" on 127.0.0.1:5432, created
# when missing), BROKER_URL (default RabbitMQ guest@127.0.0.1:5672), API_PORTS (default
# "8001 8002"), WORKER_CONCURRENCY (default 2), LOG_DIR (default .backfiller/cluster).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-.venv/bin}
DEFINITIONS=${DEFINITIONS:-backfiller.examples.quickstart:definitions}
DATABASE_URL=${DATABASE_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/backfiller_cluster}
BROKER_URL=${BROKER_URL:-amqp://guest:guest@127.0.0.1:5672//}
API_PORTS=${API_PORTS:-8001 8002}
WORKER_CONCURRENCY=${WORKER_CONCURRENCY:-2}
LOG_DIR=${LOG_DIR:-.backfiller/cluster}
mkdir -p "$LOG_DIR"

# Create the database when missing (PostgreSQL's own client, if there is one), then migrate:
# `db upgrade` always comes before the API and the daemons start.
db_name=${DATABASE_URL##*/}
if command -v psql >/dev/null && [[ $DATABASE_URL == postgresql* ]]; then
  admin=${DATABASE_URL%/*}/postgres
  admin=${admin/postgresql+psycopg/postgresql}
  psql -q "$admin" -tc "SELECT 1 FROM pg_database WHERE datname = '$db_name'" | grep -q 1 \
    || psql -q "$admin" -c "CREATE DATABASE \"$db_name\""
fi
"$BIN/backfiller" db upgrade --database "$DATABASE_URL"

pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait || true
}
trap stop INT TERM EXIT

export BACKFILLER_DATABASE_URL=$DATABASE_URL BACKFILLER_BROKER_URL=$BROKER_URL
export BACKFILLER_DEFINITIONS=$DEFINITIONS
for i in 1 2 3; do
  "$BIN/backfiller" worker --concurrency "$WORKER_CONCURRENCY" >"$LOG_DIR/worker-$i.log" 2>&1 &
  pids+=($!)
done
for i in 1 2; do
  "$BIN/backfiller" daemon --launcher celery >"$LOG_DIR/daemon-$i.log" 2>&1 &
  pids+=($!)
done
for port in $API_PORTS; do
  "$BIN/backfiller" serve --auth none --host 127.0.0.1 --port "$port" \
    >"$LOG_DIR/api-$port.log" 2>&1 &
  pids+=($!)
done
echo "cluster up: API on ports $API_PORTS, 2 daemons, 3 Celery workers (logs in $LOG_DIR)." >&2
echo "Press Ctrl+C to stop." >&2
wait -n || true
echo "a process of the cluster exited; stopping the rest (see $LOG_DIR)" >&2
