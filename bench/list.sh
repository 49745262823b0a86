#!/usr/bin/env bash
# Measures the list queries of store.Lister at 1,000,000 stored tasks on
# SQLite and Postgres (BenchmarkList), and what the indexes of migration 006
# cost a create (BenchmarkCreateIndexes), alternating the variants round by
# round so that a noisy machine hurts them alike. Prints medians.
#
# Usage: bench/list.sh [ROUNDS] [BENCHTIME]   (default: 5 rounds of 2s)
# Needs: go; Postgres at MCPTASKS_POSTGRES_URL or 127.0.0.1:5432 (skipped if
# absent). The first run loads the tasks (about 2 minutes per store) into
# $TMPDIR/mcptasks-list-1000000.db and the schemas mcptasks_list_1000000 and
# mcptasks_list_1000000_no006, which later runs reuse; about 1.5 GB of disk.
set -euo pipefail
rounds=${1:-5}
benchtime=${2:-2s}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stores=(sqlite)
if go test ./store/postgres -run TestOpen_Reopen -count 1 >/dev/null 2>&1; then stores+=(postgres); fi

# median FILE NAME: the median ns/op of the benchmark lines of NAME.
median() {
  grep -E "^$2-[0-9]+ " "$1" | awk '{print $3}' | sort -n |
    awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}

for st in "${stores[@]}"; do
  go test "./store/$st" -run XXX -bench 'BenchmarkList' -benchtime 1x >/dev/null # loads, once
  for r in $(seq "$rounds"); do
    go test "./store/$st" -run XXX -bench 'BenchmarkList' -benchtime 20x >>"$work/list-$st"
  done
  echo "## $st: list queries at 1,000,000 tasks (median of $rounds runs of 20, ms)"
  echo
  echo "| query | ms |"
  echo "|---|---:|"
  for name in $(grep -oE '^BenchmarkList/[^ ]+-[0-9]+ ' "$work/list-$st" | sed 's/-[0-9]* $//' | awk '!seen[$0]++'); do
    printf '| %s | %.2f |\n' "${name#BenchmarkList/}" "$(median "$work/list-$st" "$name" | awk '{print $1/1e6}')"
  done
  echo

  variants=$(go test "./store/$st" -run XXX -bench 'BenchmarkCreateIndexes' -benchtime 1x 2>/dev/null |
    grep -oE '^BenchmarkCreateIndexes/[^ ]+-[0-9]+ ' | sed 's/-[0-9]* $//')
  for r in $(seq "$rounds"); do
    for v in $variants; do
      go test "./store/$st" -run XXX -bench "^${v//\//\$/^}\$" -benchtime "$benchtime" >>"$work/create-$st"
    done
  done
  echo "## $st: creates with and without the indexes of 006 (median of $rounds rounds of $benchtime)"
  echo
  echo "| variant | µs/create | vs Without006 |"
  echo "|---|---:|---:|"
  for v in $variants; do
    base=$(median "$work/create-$st" "${v%/*}/Without006")
    m=$(median "$work/create-$st" "$v")
    printf '| %s | %.1f | %.2fx |\n' "${v#BenchmarkCreateIndexes/}" "$(awk "BEGIN{print $m/1000}")" "$(awk "BEGIN{print $m/$base}")"
  done
  echo
done
