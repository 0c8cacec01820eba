#!/usr/bin/env bash
# The whole scaled-out topology on one machine, on loopback: 2 API processes, 2 daemons and
# 3 Celery workers against PostgreSQL and a broker, RabbitMQ or Redis (see docs/deploy.md).
# It says "cluster up" once every API answers /readyz, every daemon holds its lease (its own
# /readyz) and every worker answers a ping through the broker; Ctrl+C stops it all ("stopped").
#
#   scripts/cluster.sh                                 # RabbitMQ, the quick start's example jobs
#   BROKER=redis scripts/cluster.sh                    # Redis
#   DEFINITIONS=my.module:definitions scripts/cluster.sh
#
# Environment (defaults in brackets):
#   BROKER              rabbitmq or redis [rabbitmq]
#   BROKER_URL          [amqp://guest:guest@127.0.0.1:5672// or redis://127.0.0.1:6379/0]
#   DATABASE_URL        [database backfiller_cluster on 127.0.0.1:5432, created when missing]
#   DEFINITIONS         [backfiller.examples.quickstart:definitions]
#   API_PORTS           an API process per port ["8001 8002"]
#   DAEMON_PORTS        a daemon per port, its /metrics and /readyz ["8011 8012"; "" for none]
#   WORKERS             Celery workers [3; 0 for none], of WORKER_CONCURRENCY processes each [2]
#   WORKER_METRICS_PORT worker i serves its /metrics on this port + i [8020: 8021, 8022...; ""
#                       for none]
#   LOG_DIR             a log per process, and this run's broker key [.backfiller/cluster]
#   READY_TIMEOUT       seconds to wait for "cluster up" [120]
#   STOP_TIMEOUT        seconds a stop may take before what is left is killed [30]
#   BACKFILLER_CELERY_QUEUE   the queue of jobs that name none [backfiller]
# Needs the virtual environment of `make bootstrap`'s Python part (BIN [.venv/bin]) and bash 4.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-.venv/bin}
BROKER=${BROKER:-rabbitmq}
case $BROKER in
  rabbitmq) default_broker_url=amqp://guest:guest@127.0.0.1:5672// ;;
  redis) default_broker_url=redis://127.0.0.1:6379/0 ;;
  *) echo "error: BROKER must be rabbitmq or redis, not '$BROKER'" >&2; exit 2 ;;
esac
BROKER_URL=${BROKER_URL:-$default_broker_url}
DATABASE_URL=${DATABASE_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/backfiller_cluster}
DEFINITIONS=${DEFINITIONS:-backfiller.examples.quickstart:definitions}
API_PORTS=${API_PORTS:-8001 8002}
DAEMON_PORTS=${DAEMON_PORTS-8011 8012}
WORKERS=${WORKERS-3}
WORKER_CONCURRENCY=${WORKER_CONCURRENCY:-2}
WORKER_METRICS_PORT=${WORKER_METRICS_PORT-8020}
LOG_DIR=${LOG_DIR:-.backfiller/cluster}
READY_TIMEOUT=${READY_TIMEOUT:-120}
STOP_TIMEOUT=${STOP_TIMEOUT:-30}
mkdir -p "$LOG_DIR"

# Every process reads these from its environment: no URL (nor its password) in a process list.
export BACKFILLER_DATABASE_URL=$DATABASE_URL BACKFILLER_BROKER_URL=$BROKER_URL
export BACKFILLER_DEFINITIONS=$DEFINITIONS
# A shared key of this run for the messages between daemons and workers, kept with the logs:
# every process reads it from that file (readable by you only), so it is in no environment.
(umask 077 && "$BIN/python" -c 'import secrets; print(secrets.token_hex(32))' \
  >"$LOG_DIR/broker-key")
export BACKFILLER_BROKER_KEY_FILE=$LOG_DIR/broker-key
unset BACKFILLER_BROKER_KEY

# The processes of the cluster: pid, what it is, its log.
pids=() names=() logs=() ready_pid=""

start() {  # start NAME LOG COMMAND...
  local name=$1 log=$2
  shift 2
  "$@" >"$log" 2>&1 &
  pids+=("$!") names+=("$name") logs+=("$log")
}

# A Ctrl+C reaches every process of the group at once: a process it ends is no crash. The
# script waits with the `wait` builtin, which a trapped signal interrupts at once (its trap runs
# then), never on a foreground `sleep`: bash may drop a SIGINT that arrives while it waits for a
# foreground command that survives it. Before naming a process gone, one more such pause.
pause() { sleep "$1" & wait $!; }

gone=""
find_gone() {  # sets gone to the index of a process that has exited, or to ""
  gone=""
  local i
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then gone=$i; return; fi
  done
}

report_gone() {  # report_gone WHEN: the process found by find_gone, and its log's last lines
  local status=0
  wait "${pids[$gone]}" || status=$?
  echo "error: the ${names[$gone]} exited (status $status)$1; stopping the rest." \
    "Its log, ${logs[$gone]}, ends with:" >&2
  tail -n 5 "${logs[$gone]}" | sed 's/^/    /' >&2
}

stop_all() {  # SIGTERM to every process, then SIGKILL (with their children) after STOP_TIMEOUT
  trap '' INT TERM  # a second Ctrl+C reaches the processes alone (Celery: cold shutdown)
  local pid left deadline=$((SECONDS + STOP_TIMEOUT))
  for pid in "${pids[@]}" $ready_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  while :; do
    left=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && left+=("$pid"); done
    ((${#left[@]} > 0 && SECONDS < deadline)) || break
    sleep 0.2
  done
  for pid in "${left[@]}"; do  # their children first: a Celery worker's pool processes
    kill -KILL $(pgrep -P "$pid" 2>/dev/null) "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}

on_exit() { stop_all; }
interrupted() {
  trap - EXIT
  stop_all
  echo "stopped" >&2
  exit 0
}
trap on_exit EXIT
trap interrupted INT TERM

# The database: created when missing (PostgreSQL), then migrated before anything starts.
if ! "$BIN/python" - >"$LOG_DIR/db.log" 2>&1 <<'EOF'
import os

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

url = make_url(os.environ["BACKFILLER_DATABASE_URL"])
if url.get_backend_name() == "postgresql":
    admin = url.set(drivername="postgresql", database="postgres")
    with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (url.database,))
        if found.fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(url.database)))
EOF
then
  echo "error: cannot create the database; see $LOG_DIR/db.log:" >&2
  tail -n 3 "$LOG_DIR/db.log" | sed 's/^/    /' >&2
  exit 1
fi
if ! "$BIN/backfiller" db upgrade >>"$LOG_DIR/db.log" 2>&1; then
  echo "error: 'backfiller db upgrade' failed; see $LOG_DIR/db.log" >&2
  exit 1
fi

tag="cluster-$$"
checks=()
for i in $(seq 1 "$WORKERS"); do
  node="$tag-worker-$i@${HOSTNAME:-localhost}"
  metrics=()
  if [[ -n $WORKER_METRICS_PORT ]]; then metrics=(--metrics-port $((WORKER_METRICS_PORT + i))); fi
  start "worker $i" "$LOG_DIR/worker-$i.log" "$BIN/backfiller" worker \
    --concurrency "$WORKER_CONCURRENCY" --hostname "$node" ${metrics[@]+"${metrics[@]}"}
  checks+=("worker:$node:$LOG_DIR/worker-$i.log")
done
i=0
for port in $DAEMON_PORTS; do
  i=$((i + 1))
  start "daemon $i" "$LOG_DIR/daemon-$i.log" \
    "$BIN/backfiller" daemon --launcher celery --metrics-port "$port"
  checks+=("daemon:$port:$LOG_DIR/daemon-$i.log")
done
for port in $API_PORTS; do
  start "API on port $port" "$LOG_DIR/api-$port.log" \
    "$BIN/backfiller" serve --auth none --host 127.0.0.1 --port "$port"
  checks+=("api:$port:$LOG_DIR/api-$port.log")
done
echo "starting ${#checks[@]} processes on $BROKER (logs in $LOG_DIR);" \
  "waiting up to $READY_TIMEOUT s for them to be ready" >&2

"$BIN/python" scripts/cluster_ready.py --timeout "$READY_TIMEOUT" "${checks[@]}" &
ready_pid=$!
while kill -0 "$ready_pid" 2>/dev/null; do
  find_gone
  if [[ -n $gone ]]; then pause 0.3; report_gone " before the cluster was up"; exit 1; fi
  pause 0.5
done
wait "$ready_pid" || exit 1  # it said which process is not ready, and where its log is
ready_pid=""

urls=""
for port in $API_PORTS; do urls+=" http://127.0.0.1:$port/"; done
worker_ports=""
if [[ -n $WORKER_METRICS_PORT ]]; then
  for i in $(seq 1 "$WORKERS"); do worker_ports+=" $((WORKER_METRICS_PORT + i))"; done
fi
echo "cluster up: API on$urls; daemons' /metrics on ports $DAEMON_PORTS;" \
  "workers' /metrics on ports${worker_ports:- (none)}; $WORKERS workers" \
  "on queue ${BACKFILLER_CELERY_QUEUE:-backfiller}, broker $BROKER. Press Ctrl+C to stop." >&2
while :; do
  pause 1
  find_gone
  if [[ -n $gone ]]; then pause 0.3; report_gone ""; exit 1; fi
done
