#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in package.json) against a
# freshly built mcptasks server: the ten tasks-* scenarios and the three
# pending 2026-07-28 scenarios one by one, then every scored 2026-07-28
# scenario. Exits non-zero on any failure.
#
# Usage: test/conformance/run.sh [--store STORE]   (default: a fresh SQLite file)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
store="sqlite:$work/conformance.db"
[ "${1:-}" = "--store" ] && store=$2
port=${CONFORMANCE_PORT:-18765}
url="http://127.0.0.1:$port/mcp"

cleanup() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$here" && npm ci --no-fund --no-audit --loglevel=error)
(cd "$root" && go build -o "$work/mcptasks" ./cmd/mcptasks)
"$work/mcptasks" serve --listen "127.0.0.1:$port" --store "$store" --log-level warn 2>"$work/server.log" &
pid=$!
timeout 30 bash -c "until curl -s -o /dev/null '$url'; do sleep 0.2; done" || { cat "$work/server.log"; exit 1; }

cd "$here"
failed=""
for s in tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal \
         tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications \
         tasks-required-task-error tasks-mrtr-composition; do
  if out=$(npx conformance server --url "$url" --scenario "$s" 2>&1); then
    echo "ok   $s: $(grep -E 'Passed:' <<<"$out" | tail -1)"
  else
    echo "FAIL $s"; echo "$out" | sed -n '/Failed Checks/,$p' | head -40
    failed="$failed $s"
  fi
done
# The pending 2026-07-28 scenarios: run by --requirements but not scored
# there, so checked one by one (they are not extension scenarios, so
# --spec-version is safe: without it they would run for the default version).
for s in json-schema-2020-12 http-header-validation http-custom-header-server-validation; do
  if out=$(npx conformance server --url "$url" --scenario "$s" --spec-version 2026-07-28 2>&1); then
    echo "ok   $s: $(grep -E 'Passed:' <<<"$out" | tail -1)"
  else
    echo "FAIL $s"; echo "$out" | sed -n '/Failed Checks/,$p' | head -40
    failed="$failed $s"
  fi
done
if out=$(npx conformance server --url "$url" --requirements 2026-07-28 2>&1); then
  echo "ok   --requirements 2026-07-28: $(grep -E '^Total' <<<"$out" | tail -1)"
else
  echo "$out" | grep -E '✗|Failed|Error' | head -40
  failed="$failed requirements-2026-07-28"
fi
if [ -n "$failed" ]; then
  echo "conformance FAILED:$failed"; echo "--- server log"; tail -50 "$work/server.log"; exit 1
fi
echo "conformance: all tasks scenarios, the pending and all scored 2026-07-28 scenarios passed"
