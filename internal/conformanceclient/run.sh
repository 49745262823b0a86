#!/usr/bin/env bash
# Runs the client side of the official MCP conformance suite (pinned in
# test/conformance) against internal/conformanceclient, one 2026-07-28
# scenario at a time (no OAuth). Exits non-zero if any scenario fails.
#
# Usage: internal/conformanceclient/run.sh [SCENARIO...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

(cd "$root" && go build -o "$work/conformanceclient" ./internal/conformanceclient)
cd "$root/test/conformance"
[ -d node_modules ] || npm ci --no-fund --no-audit --loglevel=error

scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(
  tools_call request-metadata sep-2322-client-request-state
  http-standard-headers http-custom-headers http-invalid-tool-headers
  json-schema-ref-no-deref json-schema-2020-12-preservation
)
failed=""
for s in "${scenarios[@]}"; do
  # --spec-version: tools_call and json-schema-2020-12-preservation also
  # exist for 2025-11-25, which is their default; the client speaks 2026-07-28 only.
  npx conformance client --command "$work/conformanceclient" --scenario "$s" \
    --spec-version 2026-07-28 || failed="$failed $s"
done
[ -z "$failed" ] || { echo "FAILED:$failed"; exit 1; }
echo "all ${#scenarios[@]} client scenarios passed"
