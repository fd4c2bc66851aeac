#!/usr/bin/env python3
"""Independent reading of an ETL file's presents, flips and VSyncs (DxgKrnl).

Written from the format description (/work/shared/reference/etw/etl-format.md)
and the field layouts of /work/shared/reference/etw/dxgkrnl-events.tsv, not
from etl/ or importers/etw/, so that tests/frames can check the frames nftrace
builds from an ETW capture against a second reading of the same file. It reads
PresentMon's way, for a capture without runtime (DXGI) events:

  - an application present is a Present (184) event; it started at the Blit
    (166) its thread logged since its previous Present (else at the 184), and
    its present packet is the first QueuePacketStart (178) with bPresent that
    thread queued in between; the frame's GPU work was done when that packet's
    QueuePacketStop (180, same pQueuePacket) came;
  - a DWM flip starts at its thread's first FlipMultiPlaneOverlay (252) or
    PresentMultiPlaneOverlay (251) after its previous flip's present packet; its
    present packet is the next 178 with bPresent its thread queues; it was shown at the first
    VSyncDPC (17) whose FlipFenceId's high 32 bits are that packet's
    SubmitSequence, at that VSync's FrameNumber.

Prints one JSON object: the clock frequency, and per present its thread,
process, kind, the ticks of its start, of its 184 (application presents),
ready (its packet's stop) and screen (VSync), and the VSync's frame number.
With a timeline database as well (DB), compares them with its frames table
instead: the same presents per thread in order, their start, ready and screen
times (to the nanosecond, anchored at the first Present 184 of etw_events) and
vblank numbers; prints "ok N" or each difference, exit 1.
Exit 1 with a message on anything it cannot read.
"""
import json
import struct
import sys

DXG = "802ec45a-1e99-4b83-9920-87c98277ba9d"


def guid(b):
    d1, d2, d3 = struct.unpack_from("<IHH", b, 0)
    rest = b[8:16].hex()
    return f"{d1:08x}-{d2:04x}-{d3:04x}-{rest[:4]}-{rest[4:]}"


def records(data, path):
    """Yields (ticks, id, version, tid, pid, payload) of every DxgKrnl record."""
    off = 0
    while off < len(data):
        buf_size, = struct.unpack_from("<I", data, off)
        end, = struct.unpack_from("<I", data, off + 0x30)
        if buf_size == 0 or off + buf_size > len(data) or end > buf_size:
            sys.exit(f"{path}: bad buffer at {off}")
        pos, stop = off + 72, off + end
        while pos < stop:
            word, = struct.unpack_from("<I", data, pos)
            htype = (word >> 16) & 0xFF
            if htype in (0x01, 0x02, 0x03, 0x04, 0x10, 0x11):
                size, = struct.unpack_from("<H", data, pos + 4)
            else:
                size = word & 0xFFFF
            if size == 0:
                sys.exit(f"{path}: buffer at {off}: record size 0")
            if htype in (0x12, 0x13) and guid(data[pos + 24:pos + 40]) == DXG:
                flags, = struct.unpack_from("<H", data, pos + 4)
                tid, pid, ticks = struct.unpack_from("<IIq", data, pos + 8)
                eid, ver = struct.unpack_from("<HB", data, pos + 40)
                p = pos + 80
                if flags & 0x01:  # extended data items
                    while True:
                        _, _, link, dsize = struct.unpack_from("<HHHH", data, p)
                        p += 8 + ((dsize + 7) & ~7)
                        if not link & 1:
                            break
                yield ticks, eid, ver, tid, pid, data[p:pos + size]
            pos += (size + 7) & ~7
        off += buf_size


def perf_freq(data):
    """PerfFreq of the TRACE_LOGFILE_HEADER, the first record (a SYSTEM one)."""
    word, = struct.unpack_from("<I", data, 72)
    ps = 4 if (word >> 16) & 0xFF in (0x01, 0x03) else 8
    base = 72 + 32
    boot = 56 + 2 * ps + 172
    boot = (boot + 7) & ~7
    freq, = struct.unpack_from("<q", data, base + boot + 8)
    return freq


def compare(freq, presents, db_path):
    import sqlite3
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    anchor_ns, = db.execute("SELECT ts_ns FROM etw_events WHERE provider = ? AND event_id = 184 "
                            "ORDER BY ts_ns LIMIT 1", (DXG,)).fetchone()
    anchor = min(p["present"] for p in presents if p["kind"] == "app" and p["present"] is not None)

    def ns(t):
        return None if t is None else anchor_ns + (t - anchor) * 1000000000 // freq

    rows = db.execute("SELECT thread, present_ns, ready_ns, screen_ns, vblank_seq, status, swapchain FROM frames "
                      "ORDER BY thread, present_ns, frame").fetchall()
    mine = sorted(presents, key=lambda p: (p["thread"], p["start"]))
    bad = []
    if len(rows) < len(mine):
        bad.append(f"{len(rows)} frames, {len(mine)} presents read from the file")
    by_thread = {}
    for r in rows:
        by_thread.setdefault(r[0], []).append(r)
    for tid in sorted({p["thread"] for p in mine}):
        want = [p for p in mine if p["thread"] == tid]
        got = by_thread.get(tid, [])
        # a present the file ends in the middle of (no packet, no 184) is the timeline's extra row
        if len(got) not in (len(want), len(want) + 1):
            bad.append(f"thread {tid}: {len(got)} frames, {len(want)} presents")
            continue
        for w, g in zip(want, got):
            checks = [("present_ns", ns(w["start"]), g[1]), ("ready_ns", ns(w["ready"]), g[2])]
            if w["kind"] == "flip":
                checks += [("screen_ns", ns(w["screen"]), g[3]), ("vblank_seq", w["frame"], g[4])]
                if (w["screen"] is not None) != (g[5] == "displayed"):
                    bad.append(f"thread {tid} present at {g[1]}: status {g[5]}, screen {w['screen']}")
            for name, a, b in checks:
                if (a is None) != (b is None) or (a is not None and abs(a - b) > (0 if name == "vblank_seq" else 1)):
                    bad.append(f"thread {tid} present at {g[1]}: {name} {b}, the file says {a}")
    for line in bad[:40]:
        print(line)
    if bad:
        sys.exit(1)
    print(f"ok {len(mine)}")


def main(path, db_path=None):
    with open(path, "rb") as f:
        data = f.read()
    recs = sorted(records(data, path), key=lambda r: r[0])
    presents = []
    open_ = {}      # tid -> present in progress
    pending = {}    # pQueuePacket -> present waiting for its stop
    by_seq = {}     # SubmitSequence -> flips waiting for a VSync
    for ticks, eid, ver, tid, pid, p in recs:
        if eid == 166 and tid:  # Blit: starts the thread's present, unless one is in progress
            if tid not in open_ or open_[tid]["kind"] != "app":
                open_[tid] = {"kind": "app", "thread": tid, "process": pid, "start": ticks,
                              "present": None, "packet": None, "ready": None, "screen": None,
                              "frame": None}
        elif eid in (251, 252) and tid:  # (Flip|Present)MultiPlaneOverlay: a DWM present's first events
            cur = open_.get(tid)
            if cur is None or cur["kind"] != "flip" or cur["packet"] is not None:
                cur = open_[tid] = {"kind": "flip", "thread": tid, "process": pid, "start": ticks,
                                    "present": None, "packet": None, "seq": None,
                                    "ready": None, "screen": None, "frame": None}
                presents.append(cur)
        elif eid == 178 and ver == 1:  # QueuePacketStart_V1
            ptype, seq = struct.unpack_from("<II", p, 8)
            bpresent, = struct.unpack_from("<I", p, 32)
            pq, = struct.unpack_from("<Q", p, 44)
            cur = open_.get(tid)
            if bpresent and cur is not None and cur["packet"] is None:
                cur["packet"] = pq
                cur["seq"] = seq
                pending[pq] = cur
                if cur["kind"] == "flip":
                    by_seq.setdefault(seq, []).append(cur)
        elif eid == 180 and ver == 1:  # QueuePacketStop_V1: pQueuePacket last
            pq, = struct.unpack_from("<Q", p, len(p) - 8)
            cur = pending.pop(pq, None)
            if cur is not None:
                cur["ready"] = ticks
        elif eid == 184 and tid:  # Present
            cur = open_.get(tid)
            if cur is None or cur["kind"] != "app":
                cur = {"kind": "app", "thread": tid, "process": pid, "start": ticks,
                       "packet": None, "ready": None, "screen": None, "frame": None}
            cur["present"] = ticks
            presents.append(cur)
            open_.pop(tid, None)
        elif eid == 17:  # VSyncDPC: FrameNumber at 24, FlipFenceId last
            frame, = struct.unpack_from("<I", p, 24)
            fence, = struct.unpack_from("<Q", p, len(p) - 8)
            for cur in by_seq.pop(fence >> 32, []):
                if cur["screen"] is None and ticks >= cur["start"]:
                    cur["screen"] = ticks
                    cur["frame"] = frame
    for cur in presents:
        cur.pop("packet", None)
        cur.pop("seq", None)
    if db_path:
        compare(perf_freq(data), presents, db_path)
        return
    json.dump({"freq": perf_freq(data), "presents": presents}, sys.stdout)
    print()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: etw_presents.py FILE.etl [TIMELINE.db]")
    main(*sys.argv[1:])
