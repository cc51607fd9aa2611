"""Flow control: bounds the program sequences in flight; the application blocks (no spinning)
when the bound is reached and wakes when the E-Scheduler reports progress."""
from __future__ import annotations

import threading
import time

from ..core import hooks


class Flow:
    def __init__(self, limit):
        self.limit = max(1, int(limit))
        self.inflight = 0
        self.cond = threading.Condition()
        self.waits = 0

    def acquire(self):
        with self.cond:
            if self.inflight >= self.limit:
                self.waits += 1
                t0 = time.perf_counter()
                self.cond.wait_for(lambda: self.inflight < self.limit)
                prof = hooks.profiler
                if prof is not None:
                    prof.wait(t0, time.perf_counter() - t0)
            self.inflight += 1

    def release(self):
        with self.cond:
            self.inflight -= 1
            self.cond.notify_all()

    def try_idle(self):
        """Take a slot only if nothing is in flight (for an inline run); True if taken."""
        with self.cond:
            if self.inflight:
                return False
            self.inflight += 1
            return True
