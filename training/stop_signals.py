"""Graceful stop on SIGTERM/SIGINT for the training loop."""

import signal


class StopRequest:
    """Turns SIGTERM/SIGINT into a flag checked between compiled calls."""

    def __init__(self):
        self.requested, self.signum, self._old = False, 0, {}

    def _handle(self, signum, frame):
        self.requested, self.signum = True, signum

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._old[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread
                pass
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
