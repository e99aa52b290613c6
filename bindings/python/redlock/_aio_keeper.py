"""redlock.asyncio's kept locks (no lease given): renewed on the loop by the
client's _Renewer, each acquisition's renewal a _Keeper; when to extend,
which go together and when a lock is lost are the C library's rules
(redlock_keep, redlock_renewal)."""

from __future__ import annotations

import asyncio
import heapq
from typing import Any, Callable, List, Optional, Protocol, Set, Tuple

from . import _capi, capi
from ._aio_base import _NEVER, _now
from .errors import LockError, error_for


class _Runner(Protocol):
    """What the renewal needs of the client's driver (_aio_driver._Driver)."""

    loop: asyncio.AbstractEventLoop
    pool_size: int

    def renewer(self) -> _Renewer: ...

    async def run(self, op: Any, cancellable: bool = False,
                  handle: Any = None, query: bool = False,
                  before_free: Optional[Callable[[Any], None]] = None) -> Tuple[int, str, Any]: ...


class _Holder(Protocol):
    """The lock a keeper keeps (redlock.asyncio.Lock), told when it is lost."""

    def _tell_lost(self, error: LockError) -> None: ...


class _Keeper:
    """The renewal of one kept acquisition, on its client's _Renewer. When
    to extend and when the lock is lost are the C library's rules, the same
    as its own renewal's (redlock_keep: a third of the lease after each
    success, a little sooner so that locks taken together spread out, again
    after a pause while validity lasts when the nodes fail, lost when a
    quorum says it is not ours or when validity runs out first, even with an
    extension under way), and so are the events renewal_failed and lost.
    stop() ends it after the extension under way, if any, so that no
    extension follows the release."""

    def __init__(self, lock: _Holder, driver: _Runner, handle: Any) -> None:
        self.lock = lock
        self.handle = handle
        self.lease_ms = 0  # set by Lock.extend; the renewals use the handle's
        self.error: Optional[LockError] = None
        # Its result: the error when lost, None when stopped first.
        self.ended: asyncio.Future[Optional[LockError]] = driver.loop.create_future()
        self.keep: Any = _capi.redlock_keep_new(handle, _now())
        self.extending = False   # in a renewal under way
        self.stopped = False
        self.due = 0             # the number of its live entry in the renewer's heap
        # Done once it is stopped and no extension is under way.
        self.idle: asyncio.Future[None] = driver.loop.create_future()
        self.renewer = driver.renewer()
        self.renewer.add(self, _now())

    def stop(self) -> asyncio.Future[None]:
        """Ends the renewal; the future is done once no extension is under way."""
        self.stopped = True
        if not self.ended.done():
            self.ended.set_result(None)
        if not self.extending:
            self._free()
        return self.idle

    def _free(self) -> None:
        if self.keep is not None:
            _capi.redlock_keep_free(self.keep)
            self.keep = None
        if not self.idle.done():
            self.idle.set_result(None)

    def _lose(self, error: LockError) -> None:
        if self.stopped or self.ended.done():
            return
        self.error = error
        self.ended.set_result(error)
        self.lock._tell_lost(error)


class _Renewer:
    """The renewal of a client's kept locks on the loop: one timer for all
    of them, over a heap of when each must be looked at. The locks whose
    keeps ask for an extension (a keep asks a little early, so that those
    due together go together) are renewed in batches (redlock_renewal: one
    command per node for up to 500 locks), each lock still decided on its
    own; the keeps are told each lock's outcome and say what follows."""

    def __init__(self, driver: _Runner) -> None:
        self.driver = driver
        self.heap: List[Tuple[int, int, _Keeper]] = []
        self.seq = 0
        self.timer: Optional[asyncio.TimerHandle] = None
        self.timer_at = _NEVER
        self.renewals: Set[asyncio.Task[None]] = set()
        # Renewals made, waiting their turn: as many run at once as a node's
        # pool keeps connections, so that they run on pooled connections
        # rather than each wave opening (and handshaking) new ones.
        self.waiting: List[Tuple[Any, List[_Keeper]]] = []
        self.places = max(1, driver.pool_size)

    def add(self, keeper: _Keeper, at: int) -> None:
        """Looks at keeper again at `at`."""
        self.seq += 1
        keeper.due = self.seq   # its entries before this one are stale
        heapq.heappush(self.heap, (at, self.seq, keeper))
        if at < self.timer_at:
            if self.timer is not None:
                self.timer.cancel()
            self.timer_at = at
            self.timer = self.driver.loop.call_later(max(0, at - _now()) / 1000, self._tick)

    def _tick(self) -> None:
        self.timer, self.timer_at = None, _NEVER
        now = _now()
        renewal: Any = None
        batch: List[_Keeper] = []
        heap = self.heap
        while heap and heap[0][0] <= now:
            _, seq, keeper = heapq.heappop(heap)
            if keeper.due != seq or keeper.keep is None or keeper.stopped \
                    or keeper.error is not None:
                continue  # looked at since, or no more kept
            what, next_at = _capi.redlock_keep_next(keeper.keep, now)
            if what == capi.REDLOCK_KEEP_LOST:
                keeper._lose(error_for(_capi.redlock_keep_status(keeper.keep),
                                       _capi.redlock_keep_message(keeper.keep)))
                if not keeper.extending:
                    keeper._free()
                continue
            if what == capi.REDLOCK_KEEP_EXTEND:
                if renewal is None:
                    renewal = _capi.redlock_renewal_new()
                if _capi.redlock_renewal_add(renewal, keeper.keep) == capi.REDLOCK_RENEWAL_FULL:
                    self._start(renewal, batch, now)
                    renewal, batch = _capi.redlock_renewal_new(), []
                    _capi.redlock_renewal_add(renewal, keeper.keep)
                batch.append(keeper)
                keeper.extending = True
            # Extending, it is looked at again when validity runs out.
            self.add(keeper, next_at)
        if renewal is not None:
            self._start(renewal, batch, now)
        # The first entry may be older than the ones looked at: the timer
        # is for it.
        if heap and heap[0][0] < self.timer_at:
            if self.timer is not None:
                self.timer.cancel()
            self.timer_at = heap[0][0]
            self.timer = self.driver.loop.call_later(max(0, self.timer_at - now) / 1000,
                                                     self._tick)

    def _start(self, renewal: Any, batch: List[_Keeper], now: int) -> None:
        if len(self.renewals) >= self.places:
            self.waiting.append((renewal, batch))
            return
        try:
            op = _capi.redlock_renewal_start(renewal, now)
        except LockError:
            op = None  # each keep was told already
        if op is None:
            _capi.redlock_renewal_free(renewal)
            self._ended(batch)
            return
        task = self.driver.loop.create_task(self._run(renewal, op, batch))
        self.renewals.add(task)
        task.add_done_callback(self._run_ended)

    def _run_ended(self, task: asyncio.Task[None]) -> None:
        self.renewals.discard(task)
        if self.waiting:
            renewal, batch = self.waiting.pop(0)
            self._start(renewal, batch, _now())

    async def _run(self, renewal: Any, op: Any, batch: List[_Keeper]) -> None:
        def tell(done_op: Any) -> None:
            _capi.redlock_renewal_ended(renewal, done_op, _now())
        try:
            await self.driver.run(op, before_free=tell)
        finally:
            _capi.redlock_renewal_free(renewal)
            self._ended(batch)

    def _ended(self, batch: List[_Keeper]) -> None:
        """A renewal ended: each of its keepers is looked at again now."""
        now = _now()
        for keeper in batch:
            keeper.extending = False
            if keeper.stopped or keeper.error is not None:
                keeper._free()
            else:
                self.add(keeper, now)

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.timer_at = _NEVER
