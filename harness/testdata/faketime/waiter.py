"""Waits 100 ms at a time on the monotonic clock, as a Python service
does: a sleep (to a monotonic deadline, since Python 3.11) and an event
that times out. After each wait it prints a line: what it was, how long it
took and when it ended on the monotonic clock, what the wall clock read
then, and the monotonic clock again after it (a reader preempted between
the two clocks shows as a gap), all in nanoseconds. A wait that fails ends it."""

import threading
import time

never_set = threading.Event()
while True:
    for what in ("sleep", "wait"):
        begun = time.monotonic_ns()
        if what == "sleep":
            time.sleep(0.1)
        else:
            never_set.wait(0.1)
        ended = time.monotonic_ns()
        wall = time.time_ns()
        print(what, ended - begun, ended, wall, time.monotonic_ns(), flush=True)
