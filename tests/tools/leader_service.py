"""The job of tests/tools/test_leader_endpoint.py: a small HTTP service run
by `zkelect run`, on the port argv[1]. Like a real leader-only service it
asks, per request, whether it still leads: its zkelect run's GET /leader
(port argv[2]) must answer 200 with the token this job was started with
($ZKELECT_TOKEN); then it answers 200 with that token, else 503."""

import http.server
import json
import os
import sys
import urllib.request

PORT, METRICS = int(sys.argv[1]), int(sys.argv[2])
TOKEN = int(os.environ["ZKELECT_TOKEN"])
ID = os.environ.get("ZKELECT_ID", "")


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        leading = False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{METRICS}/leader", timeout=0.5) as r:
                doc = json.loads(r.read())
                leading = r.status == 200 and doc.get("token") == TOKEN
        except Exception:  # 503, a stopped zkelect run, a refused connection
            leading = False
        body = json.dumps({"id": ID, "token": TOKEN}).encode() if leading else b"{}"
        self.send_response(200 if leading else 503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer.allow_reuse_address = True
http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
