#!/usr/bin/env bash
# Start RabbitMQ and Redis on 127.0.0.1 when they are not running (the Celery launcher's tests
# and the shared rate limiter use them). Installs them from Debian's packages when missing.
set -euo pipefail

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"

install() {
  command -v "$1" >/dev/null && return
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$2"
}

if ! up 6379; then
  install redis-server redis-server
  $sudo redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --save "" --appendonly no
  for _ in $(seq 1 30); do up 6379 && break; sleep 1; done
fi

if ! up 5672; then
  install rabbitmq-server rabbitmq-server
  # Loopback only; guest/guest is allowed from loopback by RabbitMQ's defaults.
  RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 $sudo -E rabbitmq-server -detached 2>/dev/null \
    || $sudo service rabbitmq-server start
  for _ in $(seq 1 60); do up 5672 && break; sleep 1; done
fi
up 6379 && up 5672
