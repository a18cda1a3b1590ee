#!/bin/bash
# Run one bench alternately from another source tree ("before") and from this checkout ("after").
#
#   git worktree add /tmp/base <commit>        (or: git archive <commit> | tar -x -C /tmp/base)
#   ROOMTAX_TEST_DB_SUFFIX=_me bench/before_after.sh /tmp/base 3 bench_consumer_batches.py --events 500 --repeats 1
#
# The before run uses the before tree's packages (PYTHONPATH comes before the workspace's
# editable installs; the platform benches' service processes inherit it) and its own copy
# of the bench (copy this checkout's into it to compare with the same bench); each run
# prints its own baseline.
set -u
before=$1 rounds=$2 bench=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
label=$(git -C "$before" rev-parse --short HEAD 2>/dev/null || echo "$before")
path=$before/libs/servicekit:$before/libs/taxcore
for svc in "$before"/services/*/; do path=$path:${svc%/}; done
for round in $(seq "$rounds"); do
  echo "=== round $round: before ($label) $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  PYTHONPATH=$path \
    "$here/.venv/bin/python" -u "$before/bench/$bench" "$@"
  echo "=== round $round: after ($(git -C "$here" rev-parse --short HEAD)) $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  "$here/.venv/bin/python" -u "$here/bench/$bench" "$@"
done
