"""A file that a test's job processes append records to, one line each (the
jobs `zkelect run` starts in tests/tools), read back as dicts and waited on
with a deadline. A suite gives the parse of its own lines."""

import time


class JobLog:
    def __init__(self, path):
        self.path = path
        path.write_text("")

    def parse(self, fields):
        """The record of one line's words, or None to skip the line."""
        raise NotImplementedError

    def records(self):
        out = []
        for line in self.path.read_text().splitlines():
            r = self.parse(line.split())
            if r is not None:
                out.append(r)
        return out

    def wait(self, pred, timeout, what):
        # A file gives no event to wait on: re-read it, bounded by the deadline.
        deadline = time.monotonic() + timeout
        while True:
            for r in self.records():
                if pred(r):
                    return r
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out ({timeout} s) waiting for {what}; "
                                     f"log: {self.records()}")
            time.sleep(0.02)
