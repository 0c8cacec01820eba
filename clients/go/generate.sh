#!/bin/sh
# Generate backfiller/generated.go from ../../schema.graphql and operations.graphql with
# gqlclientgen (Debian: gqlclient), then bind the two custom scalars: gqlclientgen declares
# every custom scalar as a Go string, but a JSON value is any JSON (an object, here) and a
# DateTime is a time. Usage: generate.sh [OUTPUT] (default: backfiller/generated.go).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/backfiller/generated.go}
gqlclientgen -s "$here/../../schema.graphql" -q "$here/operations.graphql" -o "$out" -n backfiller
sed -i \
  -e 's/^type DateTime string$/type DateTime = time.Time/' \
  -e 's/^type JSON string$/type JSON = json.RawMessage/' \
  -e 's|^\tgqlclient "git.sr.ht/~emersion/gqlclient"$|\t"encoding/json"\n\t"time"\n\n&|' \
  "$out"
gofmt -w "$out"
