#!/usr/bin/env python3
"""The README's cross-session ClickHouse queries (fleet-query: p99, lost, hangs),
answered from the sessions' SQLite timelines instead, printed as ClickHouse's
CSV rows (strings quoted, numbers bare, no header) for test_push.sh to compare.

usage: fleet_expect.py NAME SESSION_DIR...
"""
import os
import sqlite3
import sys

name, dirs = sys.argv[1], sys.argv[2:]


def q(s):
    return '"' + s.replace('"', '""') + '"'


def sessions():
    for d in dirs:
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(d, ".timeline.db"), uri=True)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        yield os.path.basename(d.rstrip("/")), meta, db


out = []
if name == "p99":
    groups = {}
    for sid, meta, db in sessions():
        for queue, stall in db.execute(
                "SELECT f.queue, d.stall_ns FROM deps d JOIN fence_ops f ON f.id = d.wait_id AND f.op = 'wait' "
                "WHERE d.stall_ns IS NOT NULL"):
            groups.setdefault((meta.get("tool_version", ""), queue), []).append(stall)
    for (build, queue) in sorted(groups):
        v = sorted(groups[(build, queue)])
        # quantileExact(level): the element at index floor(level * n) of the sorted values
        out.append("%s,%s,%d,%d" % (q(build), "\\N" if queue is None else queue, len(v), v[int(0.99 * len(v))]))
elif name == "lost":
    hosts = {}
    for sid, meta, db in sessions():
        n = db.execute("SELECT count(*) FROM fence_ops WHERE status = 'lost'").fetchone()[0]
        if n:
            h = hosts.setdefault(meta.get("host", ""), [0, 0])
            h[0] += 1
            h[1] += n
    for host, (ns, nl) in sorted(hosts.items(), key=lambda kv: (-kv[1][1], kv[0])):
        out.append("%s,%d,%d" % (q(host), ns, nl))
elif name == "hangs":
    rows = []
    for sid, meta, db in sessions():
        dur = int(meta["duration_ns"])
        for r in db.execute("SELECT queue, id, fence, value, queued_ns FROM fence_ops "
                            "WHERE op = 'wait' AND end_ns IS NULL AND status = 'unmatched'"):
            rows.append((sid, meta.get("host", ""), r[0], r[1], r[2], r[3], None if r[4] is None else dur - r[4]))
    rows.sort(key=lambda r: (-(r[6] if r[6] is not None else -(1 << 63)), r[0], r[3]))
    for r in rows[:10]:
        out.append(",".join([q(r[0]), q(r[1])] + ["\\N" if x is None else str(x) for x in r[2:]]))
else:
    sys.exit("unknown query " + name)
print("\n".join(out))
