#!/usr/bin/env bash
# Measures how fast an answer resumes a suspended task: N confirm_delete
# tasks ask and are suspended (--suspend-after 0, so that every answer
# finds its task suspended, as after the default 5 s); then each is
# answered (tasks/update) and polled every millisecond until completed. The
# latency is from sending the answer to the first tasks/get that sees the
# task completed: the answer's commit, the claim, the re-run handler getting
# its stored answer, and the finish. Three setups:
#
#   sqlite     one serve process on SQLite
#   postgres   one serve process on Postgres
#   replicas   two serve processes on one Postgres: A (--workers 0) takes the
#              creates, answers and polls, B runs every handler, so each
#              resume crosses replicas (LISTEN/NOTIFY)
#
# Usage: bench/resume.sh [N] [SETUP...]   (default 1000, all three)
# Environment: C (answering clients at once, default 1).
# Needs: go, jq, curl, psql. Ports 18231-18232 on 127.0.0.1.
set -euo pipefail
n=${1:-1000}
shift || true
setups=${*:-sqlite postgres replicas}
c=${C:-1}
source "$(dirname "$0")/lib.sh"
export PGOPTIONS="-c client_min_messages=warning"
pg=${MCPTASKS_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
sep='?'; [[ $pg == *\?* ]] && sep='&'
pgst="$pg${sep}options=-csearch_path%3Dmcptasks_resume"

serve() { # serve PORT ARGS...
  local port=$1; shift
  "$m" serve --listen 127.0.0.1:$port --suspend-after 0 --log-level error "$@" 2>>"$work/serve.log" &
  pids+=($!)
  timeout 30 bash -c "until curl -s -o /dev/null http://127.0.0.1:$port/mcp; do sleep 0.1; done"
}
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
fresh_pg() { psql -q "$pg" -c 'DROP SCHEMA IF EXISTS mcptasks_resume CASCADE; CREATE SCHEMA mcptasks_resume'; }
measure() { # measure LABEL
  "$m" bench http://127.0.0.1:18231/mcp --mode resume --tool confirm_delete --args '{"filename":"f"}' \
    --tasks "$n" -c "$c" -d 1h --json |
    jq -r --arg l "$1" '"\($l): \(.ops) tasks answered, \(.errors) errors: answer to completed p50 \(.p50Ns/1e6*10|floor/10) ms, p90 \(.p90Ns/1e6*10|floor/10) ms, p99 \(.p99Ns/1e6*10|floor/10) ms, max \(.maxNs/1e6|floor) ms"'
}

echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $n tasks, $c answering at once"
for s in $setups; do
  case $s in
  sqlite) serve 18231 --store "sqlite:$work/tasks-$RANDOM.db"; measure "one process, SQLite" ;;
  postgres) fresh_pg; serve 18231 --store "$pgst"; measure "one process, Postgres" ;;
  replicas)
    fresh_pg
    serve 18231 --store "$pgst" --workers 0
    serve 18232 --store "$pgst"
    measure "two replicas, Postgres (answer on A, resumed on B)" ;;
  *) echo "setup: sqlite, postgres or replicas, not $s" >&2; exit 2 ;;
  esac
  stop
done
psql -q "$pg" -c 'DROP SCHEMA IF EXISTS mcptasks_resume CASCADE' 2>/dev/null || true
