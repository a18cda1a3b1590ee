#!/bin/bash
# Run one bench alternately from another source tree ("before") and from this checkout ("after").
#
#   git worktree add /tmp/base <commit>
#   ROOMTAX_TEST_DB_SUFFIX=_me bench/before_after.sh /tmp/base 3 bench_consumer_batches.py --events 500 --repeats 1
#
# The before run uses the before tree's packages (PYTHONPATH comes before the workspace's
# editable installs) and its own copy of the bench; each run prints its own baseline.
set -u
before=$1 rounds=$2 bench=$3
shift 3
here=$(cd "$(dirname "$0")/.." && pwd)
for round in $(seq "$rounds"); do
  echo "=== round $round: before ($(git -C "$before" rev-parse --short HEAD)) $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  PYTHONPATH=$before/services/assessment:$before/services/filing:$before/libs/servicekit:$before/libs/taxcore \
    "$here/.venv/bin/python" -u "$before/bench/$bench" "$@"
  echo "=== round $round: after ($(git -C "$here" rev-parse --short HEAD)) $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  "$here/.venv/bin/python" -u "$here/bench/$bench" "$@"
done
