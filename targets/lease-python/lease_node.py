"""A lease elector in Python: targets/lease's algorithm, written again with
the standard library alone, as a node of the system under test.

The lease is one record in the target's store service (targets/lease's own,
cmd/lease-store), replaced by compare-and-swap on its version. Every tick
the holder renews it, stamped with its wall clock; any other node reads it
and, when it is free or older than LEASE_DURATION by the reader's own wall
clock, takes it over at once, raising the transitions counter, which is the
fencing token. The holder believes it leads for LEASE_RENEW_DEADLINE after
sending a renewal that took, counted on the monotonic clock.

Wall time is time.time_ns(), which libfaketime (clock: faketime) skews as
the clock faults say; time.monotonic(), and every sleep and timeout, keep
true time. The node serves the node API of docs/contract.md itself:
GET /health, GET /leader, POST /write and GET /clock; no watch, so the
harness polls.

Environment, besides splitbrain's: LEASE_TICK (default 100ms),
LEASE_DURATION (default 1s), LEASE_RENEW_DEADLINE (default 700ms), each a
Go duration, and LEASE_STORE (the service's name, default store).
"""

import http.client
import json
import os
import re
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A Go duration's parts: "1s", "100ms", "1m30s".
DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(name, default):
    """The variable name as seconds, read as a Go duration."""
    text = os.environ.get(name, default)
    if not re.fullmatch("(?:%s)+" % DURATION_PART.pattern, text):
        sys.exit("%s=%r: want a Go duration, such as %s" % (name, text, default))
    return sum(float(n) * UNIT_SECONDS[unit] for n, unit in DURATION_PART.findall(text))


class Elector:
    """One node's side of the election as a state machine, as lease.Elector
    in targets/lease/lease.go: time comes in as arguments (wall time in Unix
    ns, monotonic time in s), and it owns no clock and no network.

    A round is next() for a request, the store's answer to done(), again
    while done() says the round goes on: the holder writes (a renewal), any
    other node reads, and writes at once when the record turns out free or
    expired (a takeover), as client-go's leader election does."""

    def __init__(self, node, duration, renew_deadline):
        if not 0 < renew_deadline < duration:
            raise ValueError("LEASE_RENEW_DEADLINE must be positive and shorter than LEASE_DURATION")
        self.id = node
        self.duration_ns = round(duration * 1e9)
        self.renew_deadline = renew_deadline
        self.seen = {}  # the record as last read or written
        self.known = False  # seen holds an answer of the store's
        self.fresh = False  # seen was read in this round, and calls for a write
        # When the holder stops believing it leads, on the monotonic clock:
        # the sending of its last renewal that took, plus the deadline.
        self.until = None

    def next(self, wall_ns):
        """The next request of the round, at wall time wall_ns."""
        mine = self.known and self.seen.get("holder", "") == self.id
        if not mine and not self.fresh:
            return {}  # a read
        self.fresh = False
        transitions = self.seen.get("transitions", 0) + (0 if mine else 1)
        record = {"holder": self.id, "renewed_ns": wall_ns, "transitions": transitions}
        return {"write": True, "expect": self.seen.get("version", 0), "record": record}

    def done(self, req, sent_wall_ns, sent_mono, answer):
        """Takes the store's answer to req, sent at the wall and monotonic
        times given (None: no answer came, and the node knows nothing new),
        and says whether the round goes on with another request."""
        self.fresh = False
        if answer is None:
            return False
        self.seen, self.known = answer["record"], True
        holder = self.seen.get("holder", "")
        if holder != self.id:
            self.until = None
        elif req.get("write") and answer.get("ok"):
            self.until = sent_mono + self.renew_deadline
        if req.get("write"):
            return False
        self.fresh = holder == "" or self.expired(sent_wall_ns)
        return self.fresh

    def expired(self, wall_ns):
        return wall_ns > self.seen.get("renewed_ns", 0) + self.duration_ns

    def status(self, wall_ns, mono):
        """The belief at these times: (leader, who holds the lease as far as
        the node knows or "", the token while leader or 0)."""
        if self.until is not None and mono < self.until:
            return True, self.id, self.seen.get("transitions", 0)
        # A holder past its deadline names nobody: the record may still
        # look live, but it no longer counts on it.
        holder = self.seen.get("holder", "") if self.known else ""
        if holder == self.id or (holder and self.expired(wall_ns)):
            holder = ""
        return False, holder, 0


class Node:
    """Drives the elector, one request to the store at a time, every tick,
    and answers with its belief at the moment it is asked, so a node that
    was frozen past its deadline knows it the moment it wakes."""

    def __init__(self, name, elector, store, resource, tick):
        self.name = name
        self.elector = elector
        self.store = store
        self.resource = resource
        self.tick = tick
        self.lock = threading.Lock()

    def belief(self):
        with self.lock:
            return self.elector.status(time.time_ns(), time.monotonic())

    def run(self):
        """The rounds, one a tick; a round late by more than a tick skips
        the ticks it missed, as Go's ticker does."""
        start = time.monotonic()
        was = (False, 0)
        while True:
            time.sleep(self.tick - (time.monotonic() - start) % self.tick)
            more = True
            while more:
                with self.lock:
                    sent_wall, sent_mono = time.time_ns(), time.monotonic()
                    req = self.elector.next(sent_wall)
                answer = self.call(req)
                with self.lock:
                    more = self.elector.done(req, sent_wall, sent_mono, answer)
            leader, holder, token = self.belief()
            if (leader, token) != was:
                print("%s: leader, token %d" % (self.name, token) if leader else "%s: follows %r" % (self.name, holder))
            was = (leader, token)

    def call(self, req):
        """The store's answer to req, or None. An answer takes at most two
        ticks: a later one is worth less than the next round's, and a
        frozen store must not hold the loop for long."""
        post = urllib.request.Request(self.store, data=json.dumps(req).encode(), headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(post, timeout=2 * self.tick) as resp:
                return json.load(resp)
        except urllib.error.HTTPError as err:
            print("%s: store answered %d" % (self.name, err.code))
        except ValueError as err:
            print("%s: store's answer: %s" % (self.name, err))
        except (OSError, http.client.HTTPException):
            pass  # no answer: the store is down, frozen or cut off
        return None

    def write(self, key, value):
        """The fenced write of POST /write: (status, body)."""
        leader, holder, token = self.belief()
        if not leader:
            return 409, omit_empty({"error": "not-leader", "leader_id": holder})
        body = json.dumps({"key": key, "value": value, "token": token, "node": self.name}).encode()
        post = urllib.request.Request(self.resource + "/write", data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(post, timeout=2) as resp:
                return 200, {"ok": True, "token": token, "seq": json.load(resp)["seq"]}
        except urllib.error.HTTPError as refused:
            if refused.code == 412:
                return 412, {"error": "fenced", "token": token, "current": json.load(refused)["current"]}
            return 503, {"error": "the resource answered %d" % refused.code}
        except (OSError, http.client.HTTPException, ValueError, KeyError) as err:
            return 503, {"error": "the resource: %s" % (str(err) or type(err).__name__)}


def omit_empty(body):
    return {k: v for k, v in body.items() if v != ""}


class API(BaseHTTPRequestHandler):
    """The node API, answered from the server's node."""

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
        node = self.server.node
        if self.path == "/health":
            self.reply(200, {})
        elif self.path == "/leader":
            leader, holder, token = node.belief()
            belief = {"node": node.name, "leader": leader, "leader_id": holder}
            if leader:
                belief["token"] = token
            self.reply(200, omit_empty(belief))
        elif self.path == "/clock":
            self.reply(200, {"now_ns": time.time_ns()})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/write":
            self.reply(404, {"error": "not found"})
            return
        try:
            req = json.loads(body)
            key, value = req["key"], req.get("value", "")
        except (ValueError, TypeError, KeyError):
            key = ""
        if not isinstance(key, str) or key == "":
            self.reply(400, {"error": "bad write request"})
            return
        self.reply(*self.server.node.write(key, value))

    def log_message(self, format, *args):
        pass  # a line per request would bury the node's log


class Server(ThreadingHTTPServer):
    """The node API's server, for node."""

    def __init__(self, port, node):
        super().__init__(("", port), API)
        self.node = node

    def handle_error(self, request, client_address):
        # A client that hung up (a poll given up on, a write that timed
        # out: its write was made all the same) is no error of the node's.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def die_with(loop):
    """Runs loop, and ends the process if it fails: a node whose elector
    stopped must be seen to die, not serve a belief that never changes."""
    try:
        loop()
    finally:
        traceback.print_exc()
        os._exit(1)


def main():
    name = os.environ["SPLITBRAIN_NODE"]
    services = {s.split(":", 1)[0]: s for s in os.environ.get("SPLITBRAIN_SERVICES", "").split(",") if s}
    store_name = os.environ.get("LEASE_STORE", "store")
    if store_name not in services:
        sys.exit("no service %r in SPLITBRAIN_SERVICES (%s)" % (store_name, ", ".join(services)))
    tick = duration("LEASE_TICK", "100ms")
    try:
        elector = Elector(name, duration("LEASE_DURATION", "1s"), duration("LEASE_RENEW_DEADLINE", "700ms"))
    except ValueError as err:
        sys.exit(str(err))
    node = Node(name, elector, "http://%s/lease" % services[store_name], os.environ["SPLITBRAIN_RESOURCE"], tick)
    server = Server(int(os.environ.get("SPLITBRAIN_ADDR", ":7070").rsplit(":", 1)[1]), node)
    threading.Thread(target=die_with, args=(node.run,), daemon=True).start()
    print("%s: lease elector in Python %s, store %s" % (name, sys.version.split()[0], node.store))
    server.serve_forever()


if __name__ == "__main__":
    main()
