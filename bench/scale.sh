#!/usr/bin/env bash
# Measures tasks/get latency and server RSS as the SQLite store grows from
# 10 thousand to 1 million tasks (created through tools/call, durable).
#
# Usage: bench/scale.sh [SIZES...]   (default: 10000 100000 1000000)
# Needs: go, jq. Port 18210 on 127.0.0.1. Takes a few minutes.
set -euo pipefail
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 1000000)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/mcptasks" ./cmd/mcptasks)
m="$work/mcptasks"; url=http://127.0.0.1:18210/mcp
# TTL-less tasks would be swept after an hour; the run is shorter than that.
"$m" serve --listen 127.0.0.1:18210 --store "sqlite:$work/tasks.db" --workers 0 --log-level error 2>"$work/log" &
pid=$!
timeout 20 bash -c "until curl -s -o /dev/null $url; do sleep 0.1; done"
rss() { awk '/VmRSS/ {print int($2/1024) " MiB"}' /proc/$pid/status; }
have=0
echo "| stored tasks | tasks/get req/s | p50 | p99 | server RSS |"
echo "|---:|---:|---:|---:|---:|"
for n in "${sizes[@]}"; do
  if [ "$n" -gt "$have" ]; then
    "$m" bench "$url" --mode create -c 32 -n $((n - have)) -d 30m --json >/dev/null
    have=$n
  fi
  r=$("$m" bench "$url" --mode get --tasks 1000 -c 16 -d 10s --json)
  have=$((have + 1000))
  echo "| $have | $(jq '.perSecond|floor' <<<"$r") | $(jq '.p50Ns/1000|floor' <<<"$r") µs | $(jq '.p99Ns/1000|floor' <<<"$r") µs | $(rss) |"
done
