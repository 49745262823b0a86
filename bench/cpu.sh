#!/usr/bin/env bash
# Measures where the machine's CPU goes during one "mcptasks bench" run:
# per operation, the server's CPU, the load generator's, and the whole
# machine's busy time, with the machine's idle share (all from /proc,
# user and system time). The figures behind "where a settled create's CPU
# goes" in BENCHMARKS.md.
#
# Usage: bench/cpu.sh SERVER_PID MCPTASKS_BINARY URL BENCH_ARGS...
# e.g.   bench/cpu.sh "$(pgrep -f 'serve --listen 127.0.0.1:18221')" ./mcptasks \
#          http://127.0.0.1:18221/mcp --mode create --settle --tool confirm_delete \
#          --args '{"filename":"f"}' -c 16 -d 8s
# Needs: jq; Linux.
set -euo pipefail
spid=${1:?usage: bench/cpu.sh SERVER_PID MCPTASKS_BINARY URL BENCH_ARGS...}
bin=${2:?usage: bench/cpu.sh SERVER_PID MCPTASKS_BINARY URL BENCH_ARGS...}
shift 2
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime
machine() { awk '/^cpu / {busy = 0; for (i = 2; i <= NF; i++) if (i != 5 && i != 6) busy += $i; print busy, $5 + $6}' /proc/stat; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
read -r busy0 idle0 < <(machine)
s0=$(ticks "$spid")
"$bin" bench "$@" --json >"$out" &
bp=$!
b=0
while kill -0 "$bp" 2>/dev/null; do # the generator's last reading before it exits
  b=$(ticks "$bp" 2>/dev/null || echo "$b")
  sleep 0.1
done
wait "$bp"
s1=$(ticks "$spid")
read -r busy1 idle1 < <(machine)
jq -r --argjson s "$((s1 - s0))" --argjson b "$b" --argjson busy "$((busy1 - busy0))" \
  --argjson idle "$((idle1 - idle0))" --argjson hz "$hz" '
  def us(t): (t / $hz * 1e6 / .ops | floor);
  "\(.perSecond | floor)/s over \(.ops) ops: per op, server \(us($s)) µs, load generator \(us($b)) µs, machine busy \(us($busy)) µs; machine idle \($idle * 100 / ($busy + $idle) | floor)%"' "$out"
