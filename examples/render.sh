#!/bin/sh
# render.sh FRAMES SCENE stands in for a long render: it prints one
# "progress: N% ..." line per frame, which tools.yaml turns into the task's
# status message, and stops cleanly on SIGTERM (tasks/cancel).
set -eu
frames=${1:-20}
scene=${2:-demo}
frame=0
trap 'echo "render of $scene stopped at frame $frame/$frames" >&2; exit 143' TERM
echo "rendering $scene: $frames frames (task ${MCPTASKS_TASK_ID:-none})"
while [ "$frame" -lt "$frames" ]; do
	sleep 0.5
	frame=$((frame + 1))
	echo "progress: $((frame * 100 / frames))% (frame $frame/$frames)"
done
echo "rendered $frames frames of $scene"
