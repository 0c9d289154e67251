#!/usr/bin/env bash
# The live demo: starts `trainwatch daemon` on the default config, runs the bundled demo job
# (demo/train_job.py: a real PyTorch loop with a tqdm bar that crashes after a few seconds)
# with its output in a watched log directory, and prints what the daemon recorded: the
# incident, and the bundle it captured at that moment.
# Usage: demo/live-demo.sh [path/to/trainwatch]   (default: ./build/trainwatch)
set -euo pipefail
cd "$(dirname "$0")/.."
trainwatch=$(realpath "${1:-./build/trainwatch}")
work=$(mktemp -d /tmp/trainwatch-demo.XXXXXX)
# The default config reads both: where the job logs are, where the daemon keeps its state.
export TRAINWATCH_LOGS=$work/logs TRAINWATCH_STATE_DIR=$work/state
mkdir -p "$TRAINWATCH_LOGS"

"$trainwatch" daemon 2>"$work/daemon.log" &
daemon=$!
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  "$trainwatch" status >/dev/null 2>&1 && break
  kill -0 "$daemon" 2>/dev/null || { cat "$work/daemon.log"; exit 1; }
  sleep 0.1
done

echo "== the demo job trains for a few seconds, then crashes (output: $TRAINWATCH_LOGS/job.log)"
status=0
/usr/bin/python3 demo/train_job.py >"$TRAINWATCH_LOGS/job.log" 2>&1 || status=$?
tail -n 3 "$TRAINWATCH_LOGS/job.log"
echo "== the job exited with status $status"

for _ in $(seq 100); do
  [ -s "$TRAINWATCH_STATE_DIR/incidents.jsonl" ] && break
  sleep 0.1
done
echo "== trainwatch status"
"$trainwatch" status
echo "== the daemon's log"
cat "$work/daemon.log"
echo "== the incident, from $TRAINWATCH_STATE_DIR/incidents.jsonl"
if [ -s "$TRAINWATCH_STATE_DIR/incidents.jsonl" ]; then
  head -n 1 "$TRAINWATCH_STATE_DIR/incidents.jsonl" | /usr/bin/python3 -m json.tool --no-ensure-ascii
else
  echo "no incident was recorded (see the daemon's log above)"
  exit 1
fi

# The capture runs the collectors (hl-smi, nvidia-smi, pip list, dmesg, ...) when the
# incident is recorded; its bundle follows a moment later.
for _ in $(seq 300); do
  grep -q '"bundle_for"' "$TRAINWATCH_STATE_DIR/incidents.jsonl" && break
  sleep 0.1
done
bundle=$(ls "$TRAINWATCH_STATE_DIR"/bundles/*.tar.zst 2>/dev/null | head -n 1)
if [ -z "$bundle" ]; then
  echo "no bundle was written (see the daemon's log above)"
  exit 1
fi
echo "== the bundle: $bundle"
"$trainwatch" bundles show "$bundle"
echo "== what is inside (open it with: tar --zstd -xf $bundle)"
tar --zstd -tvf "$bundle"
# The page to look at: the verdict, a timeline of the job's progress and the crash, the
# devices, every file of the bundle (unpacked beside it, its links work).
mkdir -p "$work/bundle" && tar --zstd -xf "$bundle" -C "$work/bundle"
echo "== the report: $work/bundle/report.html (open it in a browser; as text:)"
if command -v w3m >/dev/null; then
  # Into a file first: head closing a pipe would kill w3m, and fail the demo under pipefail.
  w3m -dump -T text/html "$work/bundle/report.html" >"$work/report.txt"
  head -n 12 "$work/report.txt"
else
  echo "(apt-get install w3m to read it in a terminal)"
fi
