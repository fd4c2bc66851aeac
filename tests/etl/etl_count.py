#!/usr/bin/env python3
"""Independent reading of an ETL file: counts records per (provider, id, version).

Written from the format description (/work/shared/reference/etw/etl-format.md),
not from etl/'s code, so that tests/etl/compare_counts.sh can check the C
reader's counts against a second reading of the same file. Prints one line per
key, "provider<TAB>id<TAB>version<TAB>count", provider a GUID or "kernel" for
classic kernel-logger records (whose id is the HookId). Walks the buffers in
file order; exit 1 with a message on anything it cannot read.
"""
import struct
import sys
from collections import Counter


def guid(b):
    """The text of a GUID stored as Windows does (Data1-3 little-endian)."""
    d1, d2, d3 = struct.unpack_from("<IHH", b, 0)
    rest = b[8:16].hex()
    return f"{d1:08x}-{d2:04x}-{d3:04x}-{rest[:4]}-{rest[4:]}"


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    counts = Counter()
    off = 0
    while off < len(data):
        buf_size, = struct.unpack_from("<I", data, off)
        end, = struct.unpack_from("<I", data, off + 0x30)
        if buf_size == 0 or off + buf_size > len(data) or end > buf_size:
            sys.exit(f"{path}: bad buffer at {off}")
        pos = off + 72
        stop = off + end
        while pos < stop:
            word, = struct.unpack_from("<I", data, pos)
            htype = (word >> 16) & 0xFF
            if htype in (0x01, 0x02, 0x03, 0x04, 0x10, 0x11):
                # classic: version in the low word, size and HookId after it
                size, hook = struct.unpack_from("<HH", data, pos + 4)
                counts[("kernel", hook, word & 0xFFFF)] += 1
            elif htype in (0x12, 0x13):
                size = word & 0xFFFF
                guid_text = guid(data[pos + 24:pos + 40])
                eid, ver = struct.unpack_from("<HB", data, pos + 40)
                counts[(guid_text, eid, ver)] += 1
            elif htype in (0x0A, 0x14, 0x0B, 0x15):
                size = word & 0xFFFF
                guid_text = guid(data[pos + 24:pos + 40])
                opcode, = struct.unpack_from("<B", data, pos + 4)
                ver, = struct.unpack_from("<H", data, pos + 6)
                counts[(guid_text, opcode, ver)] += 1
            else:
                sys.exit(f"{path}: buffer at {off}: record at +{pos - off}: header type {htype:#x}")
            if size == 0:
                sys.exit(f"{path}: buffer at {off}: record at +{pos - off}: size 0")
            pos += (size + 7) & ~7
        off += buf_size
    for (prov, eid, ver), n in counts.items():
        print(f"{prov}\t{eid}\t{ver}\t{n}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: etl_count.py FILE.etl")
    main(sys.argv[1])
