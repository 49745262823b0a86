#!/usr/bin/env bash
# Measures a default `mcptasks serve` (workers on, the demo tools running)
# beside N tasks that wait for input: confirm_delete asks at once, and after
# --suspend-after (5 s by default) each task is suspended. Reports the
# server's RSS, goroutines and idle CPU over IDLE seconds; SIGTERM (the
# drain time) and a restart beside them (RSS, goroutines, idle CPU, claims
# and heartbeats); then, with them waiting, tasks/get and task-creating
# tools/call of confirm_delete against the plain net/http baseline in the
# same run (medians of ROUNDS rounds).
#
# Usage: bench/waiting.sh N [sqlite|postgres]   (default 10000 sqlite)
# Environment: IDLE (seconds, default 30), ROUNDS (default 3), DUR (of a
# round, default 10s), C (concurrency, default 16), SERVE_ARGS (more flags
# of serve, e.g. '--cache-bytes 16777216'; the default serve without it).
# Needs: go, jq, curl, psql (postgres), sqlite3 (FILL=sql with sqlite). Ports 18221 and
# 18222 on 127.0.0.1 (or PORT and PLAIN_PORT). The tasks are made through the
# server (`mcptasks bench --mode create`), as clients make them; with
# FILL=sql they are inserted with sqlite3 or psql instead, suspended, while
# the server is stopped: the fast path for a million. The create rounds
# run with --settle: a round ends once the tasks it created have asked
# their question, so their work is inside the measured rate.
set -euo pipefail
n=${1:-10000}
kind=${2:-sqlite}
idle=${IDLE:-30}
rounds=${ROUNDS:-3}
dur=${DUR:-10s}
c=${C:-16}
source "$(dirname "$0")/lib.sh"
port=${PORT:-18221}
base=http://127.0.0.1:$port

case $kind in
sqlite) st="sqlite:$work/tasks.db" ;;
postgres)
  export PGOPTIONS="-c client_min_messages=warning"
  pg=${MCPTASKS_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
  psql -q "$pg" -c 'DROP SCHEMA IF EXISTS mcptasks_waiting CASCADE; CREATE SCHEMA mcptasks_waiting'
  sep='?'; [[ $pg == *\?* ]] && sep='&'
  st="$pg${sep}options=-csearch_path%3Dmcptasks_waiting" ;;
*) echo "store: sqlite or postgres, not $kind" >&2; exit 2 ;;
esac

serve() { # the default serve, as a new user runs it
  # shellcheck disable=SC2086 # SERVE_ARGS is split into flags
  "$m" serve --listen 127.0.0.1:$port --store "$st" --log-level error ${SERVE_ARGS:-} 2>>"$work/serve.log" &
  pid=$!; pids+=($pid)
  timeout 30 bash -c "until curl -s -o /dev/null $base/mcp; do sleep 0.1; done"
}
metric() { curl -s "$base/metrics" | awk -v k="$1" '$1 == k {s += $2} END {print s+0}'; }
metric_sum() { curl -s "$base/metrics" | awk -v k="$1" 'index($1, k "{") == 1 || $1 == k {s += $2} END {print s+0}'; }
rss_mib() { awk '/VmRSS/ {printf "%d", $2/1024}' /proc/$pid/status; }
cpu_ticks() { awk '{print $14 + $15}' /proc/$pid/stat; }
idle_cpu() { # percent of one core over $idle seconds
  local t0 t1; t0=$(cpu_ticks); sleep "$idle"; t1=$(cpu_ticks)
  awk -v a="$t0" -v b="$t1" -v s="$idle" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", (b-a)/hz/s*100}'
}
report() { # report LABEL
  echo "$1: input_required $(metric 'mcptasks_tasks{status="input_required"}'), RSS $(rss_mib) MiB, goroutines $(metric go_goroutines), idle CPU $(idle_cpu)% of one core over ${idle}s"
}

serve
echo "store: $kind; tasks waiting: $n; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
report "empty server"
t0=$(date +%s)
if [ "${FILL:-server}" = sql ]; then
  # The fast fill: N suspended confirm_delete tasks inserted with sqlite3
  # or psql while the server is stopped, as the server leaves them
  # (input_required, asking, no lease owner), then the server started
  # beside them.
  kill -TERM "$pid"; wait "$pid" || true
  ask='{"confirm-delete":{"method":"elicitation/create","params":{"message":"Delete f?","requestedSchema":{"type":"object"}}}}'
  if [ "$kind" = sqlite ]; then
    now=$(date +%s%3N)
    sqlite3 "$work/tasks.db" "WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < $n)
      INSERT INTO tasks (id, principal, tool, args, client_capabilities, status, status_message, created_at,
        updated_at, ttl_ms, poll_interval_ms, input_requests, attempt)
      SELECT printf('fill%028d', i), 'local', 'confirm_delete', '{\"filename\":\"f\"}', '{\"elicitation\":{}}',
        'input_required', 'Delete f?', $now, $now, 3600000, 1000, '$ask', 1
      FROM g"
  else
    psql -q "$pg" -c "INSERT INTO mcptasks_waiting.mcptasks_tasks (id, principal, tool, args, client_capabilities, status, status_message, created_at,
        updated_at, ttl_ms, expires_at, poll_interval_ms, input_requests, attempt)
      SELECT 'fill' || lpad(i::text, 28, '0'), 'local', 'confirm_delete', '{\"filename\":\"f\"}', '{\"elicitation\":{}}',
        'input_required', 'Delete f?', now, now, 3600000, now + interval '1 hour', 1000, '$ask', 1
      FROM generate_series(1, $n) AS i, date_trunc('milliseconds', now()) AS now" \
      -c 'VACUUM ANALYZE mcptasks_waiting.mcptasks_tasks'
  fi
  echo "filled by SQL in $(( $(date +%s) - t0 )) s"
  serve
  sleep 10
  report "$n waiting (suspended, filled by SQL), the server started beside them 10 s before"
else
  "$m" bench "$base/mcp" --mode create --settle --tool confirm_delete --args '{"filename":"f"}' -c 32 -n "$n" -d 2h --json >"$work/fill.json"
  # Every task has asked (--settle); those that asked while fewer than
  # --max-held held are suspended after --suspend-after (5 s), the others
  # were at once.
  sleep 6
  echo "filled in $(( $(date +%s) - t0 )) s ($(jq '.perSecond|floor' "$work/fill.json") creates/s, $(jq .errors "$work/fill.json") errors)"
  report "$n waiting (suspended)"
fi

# SIGTERM beside them, and a restart beside them.
t0=$(date +%s%N)
kill -TERM "$pid"; wait "$pid" || true
echo "SIGTERM to exit: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
serve
sleep 10
report "restarted beside them"
echo "claims by the restarted server: $(metric_sum mcptasks_tasks_claimed_total), heartbeat calls: $(metric 'mcptasks_store_op_duration_seconds_count{op="heartbeat"}')"

# Throughput with them waiting, against the plain net/http baseline (the
# created tasks ask too, and are suspended after 5 s).
"$m" bench baseline plain --listen 127.0.0.1:${PLAIN_PORT:-18222} >"$work/plain.log" 2>&1 &
pids+=($!)
timeout 20 bash -c "until curl -s -o /dev/null http://127.0.0.1:${PLAIN_PORT:-18222}/mcp; do sleep 0.1; done"
for r in $(seq "$rounds"); do
  "$m" bench http://127.0.0.1:${PLAIN_PORT:-18222}/mcp --mode call --tool greet --args '{"name":"x"}' -c "$c" -d "$dur" --json | jq -c '. + {name: "plain"}'
  "$m" bench "$base/mcp" --mode get --tasks 1000 -c "$c" -d "$dur" --json | jq -c '. + {name: "get"}'
  "$m" bench "$base/mcp" --mode create --settle --tool confirm_delete --args '{"filename":"f"}' -c "$c" -d "$dur" --json | jq -c '. + {name: "create"}'
done >"$work/rounds.jsonl"
jq -s -r '
  def median: sort | .[(length/2|floor)];
  (map(select(.name == "plain") | .perSecond) | median) as $plain
  | group_by(.name)[] | (map(.perSecond) | median) as $ps
  | "\(.[0].name): \($ps|floor) req/s (median of \(length)), p99 \(map(.p99Ns) | median / 1000 | floor) µs, \($ps / $plain * 100 | floor / 100)x plain"
' "$work/rounds.jsonl"

if [ "$kind" = postgres ]; then psql -q "$pg" -c 'DROP SCHEMA IF EXISTS mcptasks_waiting CASCADE'; fi
