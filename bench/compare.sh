#!/usr/bin/env bash
# Measures mcptasks beside its two baselines in one run, on this machine,
# over loopback, and prints the medians of ROUNDS rounds and their ratios.
# The figures in BENCHMARKS.md come from this script.
#
# Usage: bench/compare.sh [ROUNDS] [DURATION]     (default 3 rounds of 10s)
# ONLY=REGEX runs only the rows whose name matches (plain-call always runs:
# it is the baseline of every ratio), e.g. ONLY='get$'.
# Needs: go, jq, psql. Ports 18201-18206 on 127.0.0.1. With a PostgreSQL
# server at $MCPTASKS_POSTGRES_URL (default: the test server of .ci/run),
# mcptasks on Postgres is measured too, in a schema of its own that the
# script drops and creates.
set -euo pipefail
rounds=${1:-3}
dur=${2:-10s}
c=${CONCURRENCY:-16}
source "$(dirname "$0")/lib.sh"
start() { # start NAME PORT ARGS...
  local name=$1 port=$2; shift 2
  "$m" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  eval "pid_$name=$!"
  timeout 20 bash -c "until curl -s -o /dev/null http://127.0.0.1:$port/mcp; do sleep 0.1; done"
}
start plain 18201 bench baseline plain --listen 127.0.0.1:18201
start gosdk 18202 bench baseline gosdk --listen 127.0.0.1:18202
start sqlite 18203 serve --listen 127.0.0.1:18203 --store "sqlite:$work/tasks.db" --log-level error --workers 0
start memory 18204 serve --listen 127.0.0.1:18204 --store memory: --log-level error --workers 0
pg=${MCPTASKS_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
if psql -q "$pg" -c 'DROP SCHEMA IF EXISTS mcptasks_compare CASCADE; CREATE SCHEMA mcptasks_compare' 2>/dev/null; then
  sep='?'; [[ $pg == *\?* ]] && sep='&'
  start postgres 18205 serve --listen 127.0.0.1:18205 --store "$pg${sep}options=-csearch_path%3Dmcptasks_compare" --log-level error --workers 0
  # The same schema without the read cache (Postgres reads every tasks/get).
  start pgnocache 18206 serve --listen 127.0.0.1:18206 --store "$pg${sep}options=-csearch_path%3Dmcptasks_compare" --log-level error --workers 0 --no-read-cache
else
  echo "no PostgreSQL at $pg: Postgres is not measured" >&2
fi

run() { # run NAME PID URL ARGS... -> one JSON line
  local name=$1 pid=$2 url=$3; shift 3
  if [ -n "${ONLY:-}" ] && [ "$name" != plain-call ] && ! [[ $name =~ $ONLY ]]; then return; fi
  "$m" bench "$url" -c "$c" -d "$dur" --server-pid "$pid" --json "$@" | jq -c --arg n "$name" --argjson r "$round" '. + {name: $n, round: $r}'
}
for round in $(seq "$rounds"); do
  run plain-call    "$pid_plain"  http://127.0.0.1:18201/mcp --mode call --tool greet --args '{"name":"x"}'
  run gosdk-call    "$pid_gosdk"  http://127.0.0.1:18202/mcp --mode call --tool greet --args '{"name":"x"}'
  run sqlite-get    "$pid_sqlite" http://127.0.0.1:18203/mcp --mode get --tasks 1000
  run sqlite-create "$pid_sqlite" http://127.0.0.1:18203/mcp --mode create
  run sqlite-call   "$pid_sqlite" http://127.0.0.1:18203/mcp --mode call --tool greet --args '{"name":"x"}'
  run memory-get    "$pid_memory" http://127.0.0.1:18204/mcp --mode get --tasks 1000
  if [ -n "${pid_postgres:-}" ]; then
    run postgres-get    "$pid_postgres" http://127.0.0.1:18205/mcp --mode get --tasks 1000
    run postgres-create "$pid_postgres" http://127.0.0.1:18205/mcp --mode create
    run postgres-nocache-get "$pid_pgnocache" http://127.0.0.1:18206/mcp --mode get --tasks 1000
  fi
done >"$work/results.jsonl"

# "vs plain" is the ratio of the medians; "per round" is the median of the
# ratios to plain-call of the same round, which a machine whose load changes
# between rounds (other work on it) moves less.
jq -s -r '
  def median: sort | if length == 0 then 0 else .[(length/2|floor)] end;
  (map(select(.name == "plain-call") | {key: (.round|tostring), value: .perSecond}) | from_entries) as $plain
  | group_by(.name) | map({name: .[0].name,
    rps: (map(.perSecond) | median), p50: (map(.p50Ns) | median), p99: (map(.p99Ns) | median),
    perRound: (map(.perSecond / $plain[.round|tostring]) | median),
    cpu: (map(.serverCpuPerRequestNs // 0) | median), errors: (map(.errors) | add)}) as $rows
  | ($rows | map({key: .name, value: .}) | from_entries) as $by
  | "| run | req/s | vs plain | vs plain, per round | p50 | p99 | p99 vs plain | server CPU/req | errors |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ($rows[] | "| \(.name) | \(.rps|floor) | \((.rps / $by["plain-call"].rps * 100 | floor) / 100)x | \((.perRound * 100 | floor) / 100)x | \((.p50/1000)|floor) µs | \((.p99/1000)|floor) µs | \((.p99 / $by["plain-call"].p99 * 100 | floor) / 100)x | \((.cpu/1000)|floor) µs | \(.errors) |"),
    "",
    (if $by["sqlite-create"] and $by["gosdk-call"] then "sqlite-create vs gosdk-call: \((($by["sqlite-create"].rps / $by["gosdk-call"].rps) * 100 | floor) / 100)x" else empty end),
    (if $by["sqlite-call"] and $by["gosdk-call"] then "sqlite-call vs gosdk-call: \((($by["sqlite-call"].rps / $by["gosdk-call"].rps) * 100 | floor) / 100)x" else empty end),
    (if $by["postgres-create"] and $by["gosdk-call"] then "postgres-create vs gosdk-call: \((($by["postgres-create"].rps / $by["gosdk-call"].rps) * 100 | floor) / 100)x" else empty end),
    (if $by["postgres-get"] and $by["postgres-nocache-get"] then "postgres-get vs postgres-nocache-get: \((($by["postgres-get"].rps / $by["postgres-nocache-get"].rps) * 100 | floor) / 100)x" else empty end)
' "$work/results.jsonl"
