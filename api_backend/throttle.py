"""The sign-in throttle: failed password checks counted per email, per source address and per pair.

Every decision and every count change happens under one lock, and an attempt is counted (as "in
flight") from the moment it is let through until its outcome is recorded. So a hundred concurrent
wrong guesses for one email see each other: at most the limit of them reach the password check.

Rules, over a sliding window of ``LOGIN_WINDOW``:

- a source (IP address) with ``per_source`` failures, over all emails, is refused: one machine cannot
  walk a list of accounts;
- a source with ``per_email`` failures for one email is refused for that email;
- once an email has ``per_email`` failures in all, every source that failed on it at least once is
  refused, while a source with no failure for it still reaches the password check. Strangers' guesses
  therefore cannot lock the real owner out, and guessing from many addresses gains one try per address.

Counts live in memory: sitelens serves from one process, and a restart forgets them.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from api_backend.errors import RateLimitedError

__all__ = ["LOGIN_WINDOW_SECONDS", "LoginAttempt", "LoginThrottle"]

LOGIN_WINDOW_SECONDS = 15 * 60
# Bounds memory against floods of made-up emails: past this many keys, expired ones are swept.
_SWEEP_AT = 50_000


@dataclass
class LoginAttempt:
    """One attempt let through the throttle; set ``failed`` when the password check fails."""

    failed: bool = False


@dataclass
class _Counts:
    failures: dict[object, deque[float]] = field(default_factory=lambda: defaultdict(deque))
    in_flight: dict[object, int] = field(default_factory=lambda: defaultdict(int))


class LoginThrottle:
    """Lets a sign-in attempt through or refuses it with 429 and ``Retry-After`` (see the module docstring)."""

    def __init__(self, per_email: int = 10, per_source: int = 30, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_email = per_email
        self.per_source = per_source
        self._clock = clock
        self._lock = threading.Lock()
        self._counts = _Counts()

    def _load(self, key: object, now: float) -> int:
        """Failures of ``key`` still inside the window plus attempts of it in flight (lock held)."""
        times = self._counts.failures.get(key)
        if times:
            while times and times[0] <= now - LOGIN_WINDOW_SECONDS:
                times.popleft()
        return (len(times) if times else 0) + self._counts.in_flight.get(key, 0)

    def _retry_after(self, key: object, now: float) -> int:
        times = self._counts.failures.get(key)
        if not times:
            return 1
        return max(1, int(times[0] + LOGIN_WINDOW_SECONDS - now) + 1)

    @contextmanager
    def attempt(self, email: str, source: str) -> Iterator[LoginAttempt]:
        """Admit one attempt (429 when refused); its outcome is recorded when the block ends."""
        email = email.strip().lower()
        keys = (("email", email), ("source", source), ("pair", email, source))
        with self._lock:
            now = self._clock()
            by_email, by_source, by_pair = (self._load(k, now) for k in keys)
            refused: tuple[tuple[str, ...], str] | None = None
            if by_source >= self.per_source:
                refused = keys[1], "Too many failed sign-in attempts from this address; try again later."
            elif by_pair >= self.per_email or (by_email >= self.per_email and by_pair > 0):
                refused = keys[2], "Too many failed sign-in attempts for this email; try again later."
            if refused is not None:
                raise RateLimitedError(refused[1], self._retry_after(refused[0], now))
            for key in keys:
                self._counts.in_flight[key] += 1
        outcome = LoginAttempt()
        try:
            yield outcome
        finally:
            with self._lock:
                now = self._clock()
                for key in keys:
                    self._counts.in_flight[key] -= 1
                    if not self._counts.in_flight[key]:
                        del self._counts.in_flight[key]
                    if outcome.failed:
                        self._counts.failures[key].append(now)
                if len(self._counts.failures) > _SWEEP_AT:
                    self._sweep(now)

    def _sweep(self, now: float) -> None:
        stale = [
            k for k, times in self._counts.failures.items() if not times or times[-1] <= now - LOGIN_WINDOW_SECONDS
        ]
        for key in stale:
            del self._counts.failures[key]
