#!/usr/bin/env python3
"""fake_clickhouse.py MODE LOG: a ClickHouse HTTP interface that misbehaves,
for test_reliability3 (nftrace push and query --clickhouse). Listens on a
free port of 127.0.0.1, prints the port on the first line of stdout, then
serves until killed; appends one line per request to LOG (the SQL's first
words).

MODE:
  lock-stolen   every statement succeeds, but the session's swap lock is
                always held by a push that looks dead (stale) and every
                RENAME of it fails as if another waiter had taken it first
                (Code: 60): a waiter must pause between tries and give up
  hostile       every answer is 200 with rows holding ESC/CSI/OSC sequences,
                CR, BS, DEL, C1 controls (U+009B, U+009D), a noncharacter,
                invalid UTF-8, written in 3-byte pieces (characters cut)
  slow          every answer comes after 30 s
  error         every answer is HTTP 500 with ClickHouse's error line
"""
import http.server
import socketserver
import sys
import time
import urllib.parse

MODE, LOG = sys.argv[1], sys.argv[2]

HOSTILE = (b"name\n"
           b"red\x1b[31mRED\x1b[0m\x1b[2J\n"
           b"title\x1b]0;pwned\x07 link\x1b]8;;http://x/\x1b\\x\n"
           b"cr\rOVER bs\b\b\bX del\x7f\n"
           b"c1\xc2\x9b" b"31m\xc2\x9d" b"0;t\xc2\x9c nonchar\xef\xbf\xbe\n"
           b"bad\xff\xfe caf\xe9 cut\xe2\x82\n"
           b"good caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                n = int(self.rfile.readline().strip().split(b";")[0], 16)
                if n == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(n)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def answer(self, code, data, pieces=0):
        self.send_response(code)
        if pieces:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(0, len(data), pieces):
                part = data[i:i + pieces]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        self.wfile.flush()

    def do_POST(self):  # pylint: disable=invalid-name
        q = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        body = self.body()
        sql = q["query"][0] if "query" in q else body.decode("utf-8", "replace")
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(" ".join(sql.split()[:3]) + "\n")
        if MODE == "lock-stolen":
            if sql.startswith("CREATE TABLE `_lock_"):
                return self.answer(500, b"Code: 57, e.displayText() = DB::Exception: Table already exists\n")
            if sql.startswith("SELECT (SELECT count() FROM system.tables"):
                return self.answer(200, b"1\tdeadbeefdeadbeef\n")
            if sql.startswith("RENAME TABLE"):
                return self.answer(500, b"Code: 60, e.displayText() = DB::Exception: Table doesn't exist\n")
            if sql.startswith("SELECT count() FROM system.clusters"):
                return self.answer(200, b"1\n")
            return self.answer(200, b"")
        if MODE == "hostile":
            return self.answer(200, HOSTILE, pieces=3)
        if MODE == "slow":
            time.sleep(30)
            return self.answer(200, b"1\n")
        return self.answer(500, b"Code: 999, e.displayText() = DB::Exception: boom\n")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    srv = Server(("127.0.0.1", 0), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
