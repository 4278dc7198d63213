"""A node in Python that keeps the node API but for one rule: its token is
the string "7", where the contract wants the integer 7. n1 leads throughout
and writes to the resource with its token as a real node does."""

import json
import os
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NODE = os.environ["SPLITBRAIN_NODE"]
RESOURCE = os.environ["SPLITBRAIN_RESOURCE"]
PORT = int(os.environ["SPLITBRAIN_ADDR"].rsplit(":", 1)[1])
LEADS = NODE == "n1"
TOKEN = 7


class Node(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # connections kept open, as Go's client keeps them
    # The headers and the body go out in two writes: with Nagle's
    # algorithm the body waits for the client's delayed ACK, 40 ms.
    disable_nagle_algorithm = True

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.reply(200, {})
        elif self.path == "/leader":
            belief = {"node": NODE, "leader": LEADS, "leader_id": "n1"}
            if LEADS:
                belief["token"] = str(TOKEN)  # the break
            self.reply(200, belief)
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/write":
            self.reply(404, {"error": "not found"})
            return
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if not LEADS:
            self.reply(409, {"error": "not-leader", "leader_id": "n1"})
            return
        write = json.dumps({"key": req["key"], "value": req["value"], "token": TOKEN, "node": NODE}).encode()
        request = urllib.request.Request(RESOURCE + "/write", data=write, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=2) as resp:
                self.reply(200, {"ok": True, "token": TOKEN, "seq": json.load(resp)["seq"]})
        except urllib.error.HTTPError as refused:
            if refused.code == 412:
                self.reply(412, {"error": "fenced", "token": TOKEN, "current": json.load(refused)["current"]})
            else:
                self.reply(503, {"error": "the resource answered %d" % refused.code})
        except OSError as err:
            self.reply(503, {"error": str(err)})

    def log_message(self, format, *args):
        pass  # a line per request would bury the node's log


ThreadingHTTPServer(("", PORT), Node).serve_forever()
