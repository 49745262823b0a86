#!/usr/bin/env bash
# Compares two builds or settings of the default `mcptasks serve` on SQLite
# in one run: each round measures the plain net/http baseline, then for A
# and then B a fresh server (a new database) under tasks/get and under
# settled task-creating tools/call of confirm_delete. Prints the medians
# and each round's figures, so that the per-round comparison shows what
# the noise of a shared machine hides in the medians.
#
# Usage: bench/ab.sh A_BINARY B_BINARY
# Environment: A_ENV and B_ENV (variables the server of A or B runs with,
# e.g. B_ENV=GOGC=100), ROUNDS (default 5), DUR (of a measurement, default
# 8s), C (concurrency, default 16). The load generator is B's binary.
# Needs: jq, curl. Ports 18221 and 18222 on 127.0.0.1.
set -euo pipefail
a=${1:?usage: bench/ab.sh A_BINARY B_BINARY}
b=${2:?usage: bench/ab.sh A_BINARY B_BINARY}
rounds=${ROUNDS:-5}
dur=${DUR:-8s}
c=${C:-16}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
up() { timeout 20 bash -c "until curl -s -o /dev/null $1; do sleep 0.1; done"; }
"$b" bench baseline plain --listen 127.0.0.1:18222 >/dev/null 2>&1 &
pids+=($!)
up http://127.0.0.1:18222/mcp
for r in $(seq "$rounds"); do
  "$b" bench http://127.0.0.1:18222/mcp --mode call --tool greet --args '{"name":"x"}' -c "$c" -d "$dur" --json |
    jq -c --argjson r "$r" '{round: $r, name: "plain", perSecond}'
  for side in A B; do
    bin=$a; envs=${A_ENV:-}
    if [ "$side" = B ]; then bin=$b; envs=${B_ENV:-}; fi
    rm -f "$work"/tasks.db*
    # shellcheck disable=SC2086 # envs is a list of NAME=value
    env $envs "$bin" serve --listen 127.0.0.1:18221 --store "sqlite:$work/tasks.db" --log-level error 2>>"$work/serve.log" &
    pid=$!
    up http://127.0.0.1:18221/mcp
    "$b" bench http://127.0.0.1:18221/mcp --mode get --tasks 1000 -c "$c" -d "$dur" --json |
      jq -c --argjson r "$r" --arg n "get $side" '{round: $r, name: $n, perSecond}'
    "$b" bench http://127.0.0.1:18221/mcp --mode create --settle --tool confirm_delete --args '{"filename":"f"}' -c "$c" -d "$dur" --json |
      jq -c --argjson r "$r" --arg n "create $side" '{round: $r, name: $n, perSecond}'
    kill "$pid"; wait "$pid" || true
  done
done >"$work/rounds.jsonl"
jq -s -r '
  def median: sort | .[(length/2|floor)];
  (map(select(.name == "plain") | .perSecond) | median) as $plain
  | group_by(.name)[] | (map(.perSecond) | median) as $ps
  | "\(.[0].name): \($ps|floor)/s (median of \(length)), \($ps / $plain * 100 | floor / 100)x plain; rounds: \(map(.perSecond|floor))"
' "$work/rounds.jsonl"
