"""Sample pg_stat_activity (active client backends) every 50 ms and per-process CPU; print per window.

Run beside a platform bench: ``.venv/bin/python bench/sample_activity.py 20 > out.txt`` (the window in
seconds). Each window: the CPU seconds of the busiest processes (/proc), then the most frequent
(database, wait event, query) of the active client backends. Session 14 (lead).
"""

import asyncio
import collections
import os
import sys
import time

import asyncpg

WINDOW = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
TICK = os.sysconf("SC_CLK_TCK")


def cpu():
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()[:70]
            st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if not cmd:
            continue
        key = "postgres" if "postgres" in cmd else cmd
        out.setdefault(key, 0.0)
        out[key] += (int(st[11]) + int(st[12])) / TICK
    return out


async def main():
    conn = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    q = (
        "SELECT datname, coalesce(wait_event_type,'-')||':'||coalesce(wait_event,'-'), left(query, 60) "
        "FROM pg_stat_activity WHERE state='active' AND backend_type='client backend' "
        "AND pid <> pg_backend_pid()"
    )
    while True:
        start = time.time()
        c0 = cpu()
        counts = collections.Counter()
        n = 0
        while time.time() - start < WINDOW:
            for r in await conn.fetch(q):
                counts[(r[0][-14:], r[1], r[2])] += 1
            n += 1
            await asyncio.sleep(0.05)
        c1 = cpu()
        print(
            f"=== {time.strftime('%H:%M:%S', time.gmtime(start))} +{WINDOW:.0f}s samples {n} "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        for k, v in sorted(((c1[k] - c0.get(k, 0), k) for k in c1), reverse=True)[:8]:
            if k > 0.2:
                print(f"   cpu {k:6.1f}s {v}", flush=True)
        for k, v in counts.most_common(8):
            print(f"   {v:4d} {k}", flush=True)


asyncio.run(main())
