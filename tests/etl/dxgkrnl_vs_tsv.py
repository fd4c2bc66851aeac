#!/usr/bin/env python3
"""Checks schemas/dxgkrnl.def (through schemas/dxgkrnl.md, which a test keeps equal to
the compiled table) against the reference list of DxgKrnl events
(../shared/reference/etw/dxgkrnl-events.tsv: ids, versions and field lists from public
manifests): for every event of the table and every version of it the reference lists,
the fields the table gives that version must be the reference's, in order, with the
same names and compatible types (the reference does not say which fields are arrays,
so Pointer is ptr or ptr[], UInt64 u64 or u64[]).

  dxgkrnl_vs_tsv.py SCHEMAS_MD TSV      exit 0 when equal, 1 with the differences,
                                        77 when the TSV is absent
"""
import os
import re
import sys

COMPAT = {
    "Pointer": {"ptr", "ptr[]"},
    "UInt64": {"u64", "u64[]"},
    "UInt32": {"u32"},
    "HexInt32": {"u32"},
    "Int32": {"i32"},
    "Int64": {"i64"},
    "UInt16": {"u16"},
    "UInt8": {"u8"},
    "Boolean": {"bool"},
    "UnicodeString": {"wstr"},
    "Binary": {"bytes"},
    "GUID": {"guid"},
}


def table(md):
    """id -> (min, max, [(type, name, since)]) from the markdown reference."""
    events = {}
    for line in open(md, encoding="utf-8"):
        m = re.match(r"\| (\d+) \| (\d+)(?:-(\d+))? \| (\w+) \| F? \| (.*) \| .* \|$", line.rstrip("\n"))
        if not m:
            continue
        lo = int(m.group(2))
        hi = int(m.group(3) or lo)
        fields = []
        for f in m.group(5).split(", "):
            fm = re.match(r"(\S+) (\w+)(?:\[\w+\])?(?: \(since v(\d+)\))?$", f)
            if not fm:
                sys.exit(f"{md}: cannot read field '{f}'")
            fields.append((fm.group(1), fm.group(2), int(fm.group(3) or lo)))
        events[int(m.group(1))] = (lo, hi, fields)
    return events


def reference(tsv):
    """(id, version) -> [(type, name)] from the TSV."""
    ref = {}
    with open(tsv, encoding="utf-8") as f:
        next(f)
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 4 or not cols[1].isdigit():
                continue
            m = re.match(r"[^(]*\((.*)\)$", cols[3])
            if not m:
                continue
            fields = []
            for f in m.group(1).split(", "):
                if f.strip():
                    t, n = f.strip().split(" ", 1)
                    fields.append((t, n))
            ref[(int(cols[1]), int(cols[2]))] = fields
    return ref


def main(md, tsv):
    if not os.path.exists(tsv):
        print(f"SKIP: {tsv} is absent (the reference is not part of the project)")
        return 77
    events = table(md)
    ref = reference(tsv)
    bad = []
    checked = 0
    for eid, (lo, hi, fields) in sorted(events.items()):
        versions = [v for (i, v) in ref if i == eid and lo <= v <= hi]
        if hi not in versions:
            bad.append(f"{eid}: the reference has no version {hi} (the table's newest)")
        for v in versions:
            ours = [(t, n) for (t, n, since) in fields if since <= v]
            theirs = ref[(eid, v)]
            if len(ours) != len(theirs):
                bad.append(f"{eid} v{v}: {len(ours)} fields, the reference {len(theirs)}")
            for k, ((t, n), (rt, rn)) in enumerate(zip(ours, theirs)):
                if n != rn or t not in COMPAT.get(rt, set()):
                    bad.append(f"{eid} v{v} field {k}: {t} {n}, the reference {rt} {rn}")
            checked += 1
    for b in bad:
        print("FAIL:", b)
    print(f"{len(events)} events, {checked} (id, version) layouts checked against the reference")
    return 1 if bad or not checked else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: dxgkrnl_vs_tsv.py SCHEMAS_MD TSV")
    sys.exit(main(sys.argv[1], sys.argv[2]))
