#!/usr/bin/env bash
# Parks N tasks in input_required at once (confirm_delete asks a question
# and waits) and reports the server's memory and goroutines per parked task.
#
# Usage: bench/parked.sh [N]   (default 10000)
# Needs: go, jq, curl. Port 18211 on 127.0.0.1.
set -euo pipefail
n=${1:-10000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/mcptasks" ./cmd/mcptasks)
m="$work/mcptasks"; base=http://127.0.0.1:18211
"$m" serve --listen 127.0.0.1:18211 --store "sqlite:$work/tasks.db" --log-level error 2>"$work/log" &
pid=$!
timeout 20 bash -c "until curl -s -o /dev/null $base/mcp; do sleep 0.1; done"
metric() { curl -s "$base/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
rss() { awk '/VmRSS/ {print $2}' /proc/$pid/status; }
rss0=$(rss); g0=$(metric go_goroutines)
"$m" bench "$base/mcp" --mode create --tool confirm_delete --args '{"filename":"f"}' -c 32 -n "$n" -d 30m --json >/dev/null
timeout 600 bash -c "until [ \"\$(curl -s $base/metrics | awk '\$1 == \"mcptasks_tasks{status=\\\"input_required\\\"}\" {print \$2}')\" = $n ]; do sleep 1; done"
rss1=$(rss); g1=$(metric go_goroutines)
echo "parked tasks: $n"
echo "server RSS: $((rss0/1024)) MiB -> $((rss1/1024)) MiB: $(( (rss1-rss0) / n )) KiB per parked task"
echo "goroutines: $g0 -> $g1: $(awk -v a="$g0" -v b="$g1" -v n="$n" 'BEGIN {printf "%.1f", (b-a)/n}') per parked task (handler + heartbeat); none per poll"
r=$("$m" bench "$base/mcp" --mode get --tasks 1000 -c 16 -d 10s --json 2>/dev/null || true)
echo "tasks/get meanwhile: $(jq '.perSecond|floor' <<<"$r") req/s, p99 $(jq '.p99Ns/1000|floor' <<<"$r") µs"
