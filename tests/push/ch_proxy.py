#!/usr/bin/env python3
"""HTTP proxy for test_push.sh: forwards requests to a ClickHouse HTTP port and
fails the Nth INSERT on purpose, so a push can be broken half-way, at a known
point, every run.

usage: ch_proxy.py LISTEN_PORT_FILE UPSTREAM_PORT N MODE MARKER
  MODE drop: at the Nth INSERT close the connection without an answer and stop
             accepting connections (the server went away).
  MODE hang: at the Nth INSERT write MARKER and wait forever (the test kills
             the push process then).
Writes the port it listens on to LISTEN_PORT_FILE once listening.
"""
import http.client
import http.server
import os
import sys
import threading
import time

port_file, upstream, nth, mode, marker = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
inserts = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        global inserts
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""  # nftrace push streams INSERT bodies in chunks
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                chunk = self.rfile.read(size)
                self.rfile.readline()
                if size == 0:
                    break
                body += chunk
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if "query=INSERT" in self.path:
            with lock:
                inserts += 1
                hit = inserts == nth
            if hit:
                with open(marker, "w") as f:
                    f.write("%d\n" % inserts)
                if mode == "hang":
                    while True:
                        time.sleep(1)
                self.close_connection = True
                self.connection.shutdown(2)
                os._exit(0)
        up = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
        up.request("POST", self.path, body=body)
        r = up.getresponse()
        data = r.read()
        self.send_response(r.status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        up.close()


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
