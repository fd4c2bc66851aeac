#!/usr/bin/env python3
"""hostile_check.py KIND [--proto PROTO] FILE...: is each output of nftrace, made from a
session whose names carry the hostile-string set (tests/hostile.h),
well-formed for its format, with no raw control character in it?

KIND: text (a terminal's: valid UTF-8, printable but newline and tab),
json (one JSON document, strict), jsonl (a JSON document per line), xml
(SVG), html (the report page), pdf (its /Title), png, proto (Perfetto:
PROTO is tests/export/perfetto_subset.proto; decoded by protoc as proto3,
which refuses invalid UTF-8 in string fields, every string printable).
Prints nothing and exits 0 when every file passes, else one line and exit 1.
"""
import codecs
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.dom.minidom


CURRENT = [""]


def fail(msg):
    print(f"{CURRENT[0]}: {msg}")
    sys.exit(1)


def bad_char(c, nl):
    o = ord(c)
    if nl and c in "\n\t":
        return False
    if o < 0x20 or 0x7F <= o <= 0x9F or o in (0x2028, 0x2029):
        return True
    return 0xFDD0 <= o <= 0xFDEF or (o & 0xFFFE) == 0xFFFE


def printable(data, what, nl=True):
    try:
        text = data.decode("utf-8")  # strict: no surrogates, overlongs, past U+10FFFF
    except UnicodeDecodeError as e:
        fail(f"{what}: not UTF-8 at byte {e.start}: {data[max(0, e.start - 20):e.start + 20]!r}")
    for i, c in enumerate(text):
        if bad_char(c, nl):
            fail(f"{what}: raw U+{ord(c):04X} at character {i}: {text[max(0, i - 30):i + 10]!r}")
    return text


def check_proto(path, proto):
    with tempfile.TemporaryDirectory() as d:
        with open(proto, encoding="utf-8") as f:
            src = f.read().replace('syntax = "proto2"', 'syntax = "proto3"')
        with open(os.path.join(d, "p3.proto"), "w", encoding="utf-8") as f:
            f.write(src)
        with open(path, "rb") as f:
            r = subprocess.run(["protoc", f"-I{d}", "--decode=perfetto.protos.Trace", "p3.proto"],
                               stdin=f, capture_output=True, check=False)
    if r.returncode != 0 or r.stderr:
        fail(f"protoc (proto3) refused it: {r.stderr.decode(errors='replace')[:300]}")
    n = 0
    for m in re.finditer(rb'"((?:[^"\\]|\\.)*)"', r.stdout):
        n += 1
        raw = codecs.escape_decode(m.group(1))[0]
        printable(raw, f"string field {raw[:40]!r}", nl=False)
    if n == 0:
        fail("no string field decoded")


def check_pdf(data):
    m = re.search(rb"/Title\s*(\((?:[^()\\]|\\.)*\)|<[0-9A-Fa-f\s]*>)", data)
    if not m:
        fail("no /Title in the PDF's metadata")
    t = m.group(1)
    if t.startswith(b"<"):
        raw = bytes.fromhex(t[1:-1].decode())
        title = raw[2:].decode("utf-16-be") if raw.startswith(b"\xfe\xff") else raw.decode("latin-1")
    else:
        title = codecs.escape_decode(t[1:-1])[0].decode("latin-1")
    for i, c in enumerate(title):
        if bad_char(c, False):
            fail(f"/Title: U+{ord(c):04X} at {i}: {title!r}")


def main():
    kind, args, proto = sys.argv[1], sys.argv[2:], None
    if args[:1] == ["--proto"]:
        proto, args = args[1], args[2:]
    if not args:
        CURRENT[0] = kind
        fail("no file to check")
    for path in args:
        CURRENT[0] = path
        check_one(kind, path, proto)


def check_one(kind, path, proto):
    with open(path, "rb") as f:
        data = f.read()
    if kind == "text":
        printable(data, "text")
    elif kind == "json":
        try:
            json.loads(printable(data, "json"), strict=True)
        except ValueError as e:
            fail(f"not JSON: {e}")
    elif kind == "jsonl":
        for k, line in enumerate(printable(data, "jsonl").splitlines()):
            try:
                json.loads(line, strict=True)
            except ValueError as e:
                fail(f"line {k + 1} is not JSON: {e}")
    elif kind == "xml":
        printable(data, "svg")
        try:
            xml.dom.minidom.parseString(data)
        except Exception as e:  # pylint: disable=broad-except
            fail(f"not well-formed XML: {e}")
    elif kind == "html":
        text = printable(data, "html")
        for planted in ("<img src=x onerror", "</script><script>alert", "--><!--"):
            if planted in text:
                fail(f"holds {planted!r} raw")
        if text.count("<script") != text.count("</script>"):
            fail(f"{text.count('<script')} <script> but {text.count('</script>')} </script>")
    elif kind == "pdf":
        if not data.startswith(b"%PDF-"):
            fail("not a PDF")
        check_pdf(data)
    elif kind == "png":
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            fail("not a PNG")
    elif kind == "proto":
        check_proto(path, proto)
    else:
        fail(f"unknown kind {kind}")


if __name__ == "__main__":
    main()
