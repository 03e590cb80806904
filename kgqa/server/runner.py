"""One worker, one question at a time, in the order they came: the LLM (and the embedder) are
one instance each and not made for concurrent calls.

A bounded number of requests may wait behind the one running; one more is refused at once
(:class:`~kgqa.server.errors.QueueFull`, a 503 with ``Retry-After``). Each request has a
deadline from the moment it was queued: one that is still waiting at its deadline never
starts, and one that is running stops at its next stage (the pipeline's stages ask
:meth:`Job.check`, :mod:`kgqa.progress`), so a stuck question does not hold the queue for
longer than a stage.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from kgqa.server.errors import QueueFull, RequestTimedOut

T = TypeVar("T")
# What a first Retry-After assumes a request takes, before any has been timed.
FIRST_ESTIMATE_S = 5.0


class Job:
    """One queued request: its deadline and whether it was given up (client gone, timed
    out)."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check(self) -> None:
        """Raise :class:`RequestTimedOut` when the request was given up or is past its
        deadline; called before each stage."""
        if self.remaining() <= 0:
            raise RequestTimedOut(
                f"the request took longer than server.request_timeout ({self.timeout:g} s; "
                "KGQA_SERVER_REQUEST_TIMEOUT) and was stopped"
            )
        if self.cancelled:
            raise RequestTimedOut("the request was given up (its client went away) and stopped")


class Runner:
    """``queue_size`` requests may wait behind the running one."""

    def __init__(self, queue_size: int, timeout: float):
        self.queue_size = max(0, queue_size)
        self.timeout = timeout
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgqa-worker")
        self._lock = threading.Lock()
        self._pending = 0
        self._mean_s: float | None = None
        self._running: Job | None = None

    @property
    def pending(self) -> int:
        """Requests queued or running."""
        with self._lock:
            return self._pending

    @property
    def running(self) -> Job | None:
        """The job the worker is on, if any."""
        return self._running

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the mean request time so far."""
        mean = self._mean_s if self._mean_s is not None else FIRST_ESTIMATE_S
        return max(1, math.ceil(mean))

    def submit(self, fn: Callable[[Job], T]) -> tuple[Job, Future[T]]:
        """Queue ``fn(job)``; :class:`QueueFull` when every place is taken."""
        with self._lock:
            if self._pending >= self.queue_size + 1:
                raise QueueFull(
                    f"the server is busy: {self._pending} requests are queued or running "
                    f"(server.queue_size {self.queue_size}); retry later",
                    self.retry_after(),
                )
            self._pending += 1
        job = Job(self.timeout)

        def work() -> T:
            job.check()  # given up, or its deadline passed while it waited
            start = time.monotonic()
            self._running = job
            try:
                return fn(job)
            finally:
                self._running = None
                took = time.monotonic() - start
                with self._lock:
                    self._mean_s = took if self._mean_s is None else 0.8 * self._mean_s + 0.2 * took

        future = self._executor.submit(work)
        # Released when the work ends, fails or is cancelled before it started.
        future.add_done_callback(lambda _f: self._release())
        return job, future

    def _release(self) -> None:
        with self._lock:
            self._pending -= 1

    async def run(self, fn: Callable[[Job], T]) -> T:
        """``fn(job)`` on the worker, awaited up to the deadline (then
        :class:`RequestTimedOut`; the work stops at its next stage)."""
        job, future = self.submit(fn)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout=job.remaining())
        except TimeoutError:
            job.cancel()
            future.cancel()
            job.check()
            raise
        except asyncio.CancelledError:
            job.cancel()
            future.cancel()
            raise

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
