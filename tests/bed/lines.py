"""The one line pump: a child process's stdout (or stderr) read line by line
on a thread of its own, so that every read of it can have a deadline.

    pump = LinePump(proc.stdout)                 # lines kept as str, no newline
    pump.next(timeout)                           # the next unread one; None at EOF
    i = pump.wait(lambda text: "READY" in text, timeout, since=pump.mark())

    LinePump(proc.stdout, item=lambda rx, text: text.split(), end=lambda rx: ["EOF"])
    LinePump(proc.stderr, last=200)              # only the last 200 lines

item(rx, text)  what .lines keeps of a line (text still ends with its
                newline; rx is when the pump read it, from `clock`);
                default: text without its newline
end(rx)         kept after the last line when the stream ends; default: nothing
on_item(it)     called with .cv held after each item is kept (the end too):
                to merge several pumps into one stream (participant.Hub)
cv              a threading.Condition to share (default: one of its own);
                every change of .lines and .ended is made under it and
                notified. .lines is one list for the pump's whole life, so
                an owner may hand it out as its own attribute
keep            a path every line is also written to, prefixed with rx
last            keep only the last `last` items (for a chatty stderr; then
                indices into .lines are not stable: no mark/wait/next)
"""

import threading
import time


def _text(rx, text):
    return text.rstrip("\n")


class LinePump:
    def __init__(self, stream, item=None, end=None, on_item=None, cv=None, keep=None,
                 last=None, clock=time.time_ns, name=None):
        self.stream = stream
        self.cv = cv if cv is not None else threading.Condition()
        self.lines = []
        self.ended = False
        self._item = item or _text
        self._end = end
        self._on_item = on_item
        self._keep = keep
        self._last = last
        self._clock = clock
        self._next = 0
        self.thread = threading.Thread(target=self._run, daemon=True, name=name or "lines")
        self.thread.start()

    def _add(self, it):         # with self.cv held
        self.lines.append(it)
        if self._last is not None:
            del self.lines[:-self._last]
        if self._on_item:
            self._on_item(it)

    def _run(self):
        out = open(self._keep, "w") if self._keep else None
        try:
            for text in self.stream:
                rx = self._clock()
                if out:
                    out.write(f"{rx} {text}")
                    out.flush()
                it = self._item(rx, text)
                with self.cv:
                    self._add(it)
                    self.cv.notify_all()
        finally:
            if out:
                out.close()
            with self.cv:
                if self._end:
                    self._add(self._end(self._clock()))
                self.ended = True
                self.cv.notify_all()

    def mark(self):
        """An index into .lines: pass it as `since` to look only at later lines."""
        with self.cv:
            return len(self.lines)

    def wait(self, pred, timeout, since=0):
        """The index of the first item at index >= since for which pred is
        truthy; None when the deadline passes or the stream ends first."""
        deadline = time.monotonic() + timeout
        i = since
        with self.cv:
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i]):
                        return i
                    i += 1
                left = deadline - time.monotonic()
                if self.ended or left <= 0:
                    return None
                self.cv.wait(left)

    def next(self, timeout):
        """The next item no next() returned yet, in order (a queue); None
        once the stream ended and all were returned; TimeoutError when none
        comes within timeout."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while self._next >= len(self.lines):
                if self.ended:
                    return None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self.cv.wait(left)
            self._next += 1
            return self.lines[self._next - 1]

    def join(self, timeout=None):
        self.thread.join(timeout)
