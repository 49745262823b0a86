#!/usr/bin/env bash
# Profiles mcptasks serve (SQLite, --workers 0 unless DEFAULT=1) under one
# bench mode and prints the CPU profile's top functions by cumulative time:
# the profiles behind "Where the time goes" in BENCHMARKS.md.
#
# Usage: bench/profile.sh MODE [SECONDS]   (MODE: get, create or call)
# Environment: DEFAULT=1 profiles the default serve (workers on, the created
# tasks running); TOOL and ARGS name the tool of create (default
# slow_compute), e.g. TOOL=confirm_delete ARGS='{"filename":"x"}'.
# Needs: go, curl. Ports 18220 and 18221 on 127.0.0.1. Keeps the raw
# profile as bench-MODE.pprof in the current directory.
set -euo pipefail
mode=${1:?usage: bench/profile.sh get|create|call [SECONDS]}
secs=${2:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/mcptasks" ./cmd/mcptasks)
m="$work/mcptasks"; url=http://127.0.0.1:18220/mcp
"$m" serve --listen 127.0.0.1:18220 --pprof-listen 127.0.0.1:18221 --store "sqlite:$work/tasks.db" \
  $([ "${DEFAULT:-0}" = 1 ] || echo --workers 0) --log-level error 2>"$work/log" &
pid=$!
timeout 20 bash -c "until curl -s -o /dev/null $url; do sleep 0.1; done"
args=(--mode "$mode")
case $mode in
  get) args+=(--tasks 1000) ;;
  call) args+=(--tool greet --args '{"name":"x"}') ;;
  create) [ -z "${TOOL:-}" ] || args+=(--tool "$TOOL" --args "${ARGS:-"{}"}") ;;
esac
if [ "$mode" = create ] && [ "${DEFAULT:-0}" = 1 ]; then
  args+=(--settle) # the rate printed counts the created tasks' work
fi
"$m" bench "$url" "${args[@]}" -c 16 -d "$((secs + 4))s" >"$work/bench.txt" 2>&1 &
bench=$!
sleep 2 # past the setup of get (its 1,000 creates)
curl -s -o "bench-$mode.pprof" "http://127.0.0.1:18221/debug/pprof/profile?seconds=$secs"
wait $bench
cat "$work/bench.txt"
echo
go tool pprof -top -cum -nodecount=60 "$work/mcptasks" "bench-$mode.pprof" 2>/dev/null
