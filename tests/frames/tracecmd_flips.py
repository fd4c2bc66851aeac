#!/usr/bin/env python3
"""Independent reading of a trace-cmd file's i915 page flips, through `trace-cmd report`.

Pairs each i915_flip_request(plane, obj) with the next i915_flip_complete of the
same plane and object, and finds the drm_vblank_event of CRTC `plane` that
follows the completion within 1 ms. Prints one JSON object: the vblank count
and per flip (in request order) its plane, the request's and the completion's
times in microseconds (as trace-cmd prints them), the vblank's seq (null when
none), the requesting thread. Written from the kernel's event formats, not from
nftrace's code, for tests/frames.
"""
import collections
import json
import re
import subprocess
import sys

LINE = re.compile(r"\s*(.+?)-(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{6}):\s+(\S+):\s+(.*)")


def main(path):
    out = subprocess.run(["trace-cmd", "report", path], capture_output=True, text=True, check=True).stdout
    events = []
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or m.group(6) not in ("i915_flip_request", "i915_flip_complete", "drm_vblank_event"):
            continue
        us = int(m.group(4)) * 1000000 + int(m.group(5))
        fields = dict(kv.strip().split("=", 1) for kv in m.group(7).split(","))
        events.append((us, m.group(6), int(m.group(2)), fields))
    pending = collections.defaultdict(list)
    flips = []
    vblanks = collections.defaultdict(list)
    for us, name, pid, f in events:
        if name == "drm_vblank_event":
            vblanks[int(f["crtc"])].append((us, int(f["seq"])))
        elif name == "i915_flip_request":
            flip = {"plane": int(f["plane"]), "request_us": us, "complete_us": None, "seq": None, "thread": pid}
            pending[(f["plane"], f["obj"])].append(flip)
            flips.append(flip)
        else:
            q = pending[(f["plane"], f["obj"])]
            if q:
                q.pop(0)["complete_us"] = us
    for flip in flips:
        if flip["complete_us"] is None:
            continue
        for us, seq in vblanks[flip["plane"]]:
            if flip["complete_us"] <= us <= flip["complete_us"] + 1000:
                flip["seq"] = seq
                break
    json.dump({"vblanks": sum(len(v) for v in vblanks.values()), "flips": flips}, sys.stdout)
    print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tracecmd_flips.py FILE.dat")
    main(sys.argv[1])
