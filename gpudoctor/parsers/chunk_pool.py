"""Run one function over many jobs in forked worker processes and hand the results back in submission order.

`gpudoctor check` on a multi-gigabyte log is CPU-bound in Python (the NCCL parser, the signature catalogue, the
error-line scan: docs/benchmarks.md), and a chunk's facts depend only on its own text and formats, so
parsers/stream.py parses the chunks of a large input with this pool and merges what each gives, in order. The result
is the same as running the jobs one after another in this process (tests/test_chunk_pool.py): with ``jobs`` 1, where
``fork`` is not available, or once the pool has broken, they are run here, by the same function.

Workers are forked, on Linux (they inherit the loaded catalogue and compiled matcher), ignore SIGINT (the reading
process handles Ctrl-C and stops them), and at most ``jobs + 1`` jobs are in flight, so memory stays flat.
"""
from __future__ import annotations

import contextlib
import gc
import os
import signal
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a pool starts: concurrent.futures.process costs ~40 ms, small inputs need none
    from concurrent.futures import Future, ProcessPoolExecutor

MAX_JOBS = 8
JOBS_ENV = "GPUDOCTOR_JOBS"


def default_jobs() -> int:
    """Worker processes for a large input: ``GPUDOCTOR_JOBS`` when set to a positive integer, else the CPUs this
    process may run on (its affinity mask), at most MAX_JOBS. 1 means "parse in this process"."""
    raw = os.environ.get(JOBS_ENV, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return min(int(raw), MAX_JOBS)
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_JOBS))


def can_fork() -> bool:
    """Whether workers can be forked: Linux only (macOS offers fork, but forking after system frameworks are loaded
    is unsafe there, which is why Python defaults to spawn on it; elsewhere the chunks are parsed in-process)."""
    import multiprocessing
    import sys

    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: parsing a chunk allocates ~10^5 short-lived, acyclic objects (lines,
    matches) that reference counting frees, and the collector's passes over them cost ~15% of the parse
    (docs/benchmarks.md)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


MMAP_THRESHOLD_BYTES = 1024 * 1024
_M_MMAP_THRESHOLD = -3  # glibc malloc.h


def fixed_mmap_threshold() -> bool:
    """Make glibc serve every allocation of MMAP_THRESHOLD_BYTES or more with its own mmap, returned to the system
    when freed; True when set. By default glibc raises that threshold each time such a block is freed (up to 32 MiB),
    after which the 4 MiB chunks and their decoded text come from the heap, whose holes keep growing: reading a 1 GB
    .gz log, the reader's RSS rose from 93 to 124 MB and each worker's to 117 MB; with the fixed threshold 101 and
    97 MB (docs/benchmarks.md). Called before a large input is read (and the workers fork, so they inherit it).
    A no-op off glibc."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries without mallopt
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


def _worker_signals() -> None:
    """A worker leaves Ctrl-C to the reading process, and ends quietly when that process terminates it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class OrderedPool:
    """``fn(*args)`` for each ``submit(*args)``, in up to ``jobs`` forked workers; ``on_result(result)`` is called
    in this process for each, in submission order.

    ``fn`` must be a module-level function (the pool pickles it by name). ``submit`` may block until the oldest job
    is done (at most ``jobs + 1`` in flight); ``drain`` waits for all. A worker that dies (killed, out of memory)
    breaks the pool: its job and the rest then run in this process, so a result is never lost or reordered.
    ``close`` stops the workers without waiting for them. ``idle`` is work of this process's own (imports the
    report will need) done the first time it would otherwise only wait for a worker.
    """

    def __init__(self, jobs: int, fn: Callable[..., Any], on_result: Callable[[Any], None],
                 before_fork: Callable[[], None] | None = None, idle: Callable[[], None] | None = None):
        self.jobs = jobs
        self.fn = fn
        self.on_result = on_result
        self.before_fork = before_fork
        self.idle = idle  # run once, the first time this process would wait for a worker
        self._pending: deque[tuple[Future | None, tuple]] = deque()
        self._pool: ProcessPoolExecutor | None = None
        self.broken = jobs <= 1  # no workers: every job runs here (checked again when the first job comes)

    def _executor(self) -> ProcessPoolExecutor | None:
        if self._pool is None and not self.broken and not can_fork():
            self.broken = True
        if self._pool is None and not self.broken:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            if self.before_fork is not None:
                self.before_fork()
            gc.freeze()  # the reader's objects, inherited by the workers, are never scanned by their collector
            self._pool = ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_worker_signals)
        return self._pool

    def submit(self, *args: Any) -> None:
        pool = self._executor()
        fut = None
        if pool is not None:
            from concurrent.futures.process import BrokenProcessPool

            try:
                fut = pool.submit(self.fn, *args)
            except BrokenProcessPool:
                self.broken = True
        self._pending.append((fut, args))
        while self._pending and (len(self._pending) > self.jobs or self._pending[0][0] is None
                                 or self._pending[0][0].done()):
            self._finish_oldest()

    def _finish_oldest(self) -> None:
        fut, args = self._pending[0]
        result, ran = None, False
        if fut is not None:
            from concurrent.futures.process import BrokenProcessPool

            if self.idle is not None and not fut.done():
                idle, self.idle = self.idle, None
                idle()
            try:
                result, ran = fut.result(), True
            except BrokenProcessPool:
                self.broken = True
        if not ran:  # no pool, or its worker died: run it here (same function)
            result = self.fn(*args)
        self._pending.popleft()
        self.on_result(result)

    def merge_done(self) -> None:
        """Hand on the results already there at the head of the queue, without waiting (Ctrl-C: keep what is
        done)."""
        while self._pending and self._pending[0][0] is not None and self._pending[0][0].done():
            fut = self._pending[0][0]
            if fut.cancelled() or fut.exception() is not None:
                return
            self._finish_oldest()

    def drain(self) -> None:
        """Wait for every submitted job and hand on its result."""
        while self._pending:
            self._finish_oldest()

    def close(self) -> None:
        """Stop the workers. Idle ones (everything handed on) exit at once; when jobs are still pending (Ctrl-C),
        those not started are cancelled and a worker busy with one is terminated."""
        abandon = bool(self._pending)
        self._pending.clear()
        if self._pool is not None:
            procs = list(getattr(self._pool, "_processes", {}).values())
            self._pool.shutdown(wait=not abandon, cancel_futures=True)
            for p in procs if abandon else ():  # a worker busy on an abandoned job need not finish it
                if p.is_alive():
                    p.terminate()
            self._pool = None
            gc.unfreeze()
