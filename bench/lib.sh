# Sourced by the bench scripts: builds mcptasks into a work directory of
# its own and, on exit, kills the processes whose pids the script added to
# pids and removes the directory. Sets root, work, pids and m (the binary).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
(cd "$root" && go build -o "$work/mcptasks" ./cmd/mcptasks)
m="$work/mcptasks"
