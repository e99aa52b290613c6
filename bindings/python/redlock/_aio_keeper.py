"""redlock.asyncio's kept locks (no lease given): renewed on the loop by the
client's _Renewer, a loop over the C library's keeper (redlock_keeper: when
each lock is due, which renewals go together, how many run at once, which
locks were lost); each acquisition's renewal is a _Keeper."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Dict, Optional, Protocol, Set, Tuple

from . import _capi, capi
from ._aio_base import _NEVER, _now
from .errors import LockError, error_for

# What the keeper asks of its driver (redlock_keeper_drive's bits).
_RUN = capi.REDLOCK_KEEPER_RUN
_LOST = capi.REDLOCK_KEEPER_LOST
_ENDED = capi.REDLOCK_KEEPER_ENDED


class _Runner(Protocol):
    """What the renewal needs of the client's driver (_aio_driver._Driver)."""

    loop: asyncio.AbstractEventLoop
    ctx: Any

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
    as its own renewal's (a third of the lease after each success, a little
    sooner so that locks taken together spread out, again after a pause
    while validity lasts when the nodes fail, lost when a quorum says it is
    not ours or when validity runs out first, even with an extension under
    way), and so are the events renewal_failed and lost. stop() ends it
    after the extension under way, if any, so that no extension follows the
    release."""

    def __init__(self, lock: _Holder, driver: _Runner, handle: Any) -> None:
        self.lock = lock
        self.handle = handle
        self.error: Optional[LockError] = None
        # Its result: the error when lost, None when stopped first.
        self.ended: asyncio.Future[Optional[LockError]] = driver.loop.create_future()
        self.stopped = False
        self.removed = False   # out of the keeper
        # Done once it is stopped and no extension is under way.
        self.idle: asyncio.Future[None] = driver.loop.create_future()
        self.id = 0            # the keeper's, set by the renewer
        self.renewer = driver.renewer()
        self.renewer.add(self)

    def stop(self) -> asyncio.Future[None]:
        """Ends the renewal; the future is done once no extension is under way."""
        self.stopped = True
        if not self.ended.done():
            self.ended.set_result(None)
        self.renewer.remove(self)
        return self.idle

    def _lose(self, error: LockError) -> None:
        if self.stopped or self.ended.done():
            return
        self.error = error
        self.ended.set_result(error)
        self.lock._tell_lost(error)


class _Renewer:
    """The renewal of a client's kept locks on the loop: the keeper says what
    to do, and when to ask again (one timer for all of them); this runs the
    renewals it hands out, and tells each lock's holder when it is lost."""

    def __init__(self, driver: _Runner) -> None:
        self.driver = driver
        self.keeper: Any = _capi.redlock_keeper_new(driver.ctx)  # None once closed
        self.kept: Dict[int, _Keeper] = {}  # by id, until removed and idle
        self.last_id = 0
        self.timer: Optional[asyncio.TimerHandle] = None
        self.timer_at = _NEVER
        self.renewals: Set[asyncio.Task[None]] = set()
        # Done when an operation of the keeper ends (an owner's extension
        # waits for the renewal under way).
        self.changed: Optional[asyncio.Future[None]] = None

    def add(self, keeper: _Keeper) -> None:
        """Keeps keeper's lock, under an id of its own."""
        self.last_id += 1
        _capi.redlock_keeper_add(self.keeper, self.last_id, keeper.handle, _now())
        keeper.id = self.last_id
        self.kept[keeper.id] = keeper
        self._drive()

    def remove(self, keeper: _Keeper) -> None:
        """Keeps it no more; its idle future is done at once, or once the
        renewal under way ends."""
        if keeper.removed:
            return
        keeper.removed = True
        if self.keeper is None or not _capi.redlock_keeper_remove(self.keeper, keeper.id):
            self._idle(keeper)

    def _idle(self, keeper: _Keeper) -> None:
        self.kept.pop(keeper.id, None)
        if not keeper.idle.done():
            keeper.idle.set_result(None)

    def _drive(self) -> None:
        """Does what the keeper says now, and sets the timer for its next time."""
        keeper = self.keeper
        if keeper is None:
            return
        what, at = _capi.redlock_keeper_drive(keeper, _now())
        if what & _RUN:
            op = _capi.redlock_keeper_take_op(keeper)
            while op is not None:
                task = self.driver.loop.create_task(self._run(op))
                self.renewals.add(task)
                task.add_done_callback(self.renewals.discard)
                op = _capi.redlock_keeper_take_op(keeper)
        if what & _LOST:
            lost = _capi.redlock_keeper_next_lost(keeper)
            while lost:
                holder = self.kept[lost]
                holder._lose(error_for(_capi.redlock_keeper_status(keeper, lost),
                                       _capi.redlock_keeper_message(keeper, lost)))
                self.remove(holder)
                lost = _capi.redlock_keeper_next_lost(keeper)
        if what & _ENDED:
            ended = _capi.redlock_keeper_next_ended(keeper)
            while ended:
                self._idle(self.kept[ended])
                ended = _capi.redlock_keeper_next_ended(keeper)
        if at < self.timer_at:
            if self.timer is not None:
                self.timer.cancel()
            self.timer_at = at
            self.timer = self.driver.loop.call_later(max(0, at - _now()) / 1000, self._tick)

    def _tick(self) -> None:
        self.timer, self.timer_at = None, _NEVER
        self._drive()

    def _tell(self, op: Any) -> None:
        """One of the keeper's operations ended (before it is freed)."""
        if self.keeper is not None:
            _capi.redlock_keeper_op_ended(self.keeper, op, _now())
        if self.changed is not None:
            self.changed.set_result(None)
            self.changed = None

    async def _run(self, op: Any) -> None:
        try:
            await self.driver.run(op, before_free=self._tell)
        finally:
            self._drive()

    async def extend(self, keeper: _Keeper, lease_ms: int) -> Tuple[int, str]:
        """The owner's extension of keeper's lock by lease_ms, through the
        keeper, which plans the lock's next renewal from it; after the
        renewal under way, if any. (status, message); raises the library's
        error when it cannot start (the lock was lost, or released)."""
        while self.keeper is not None and not keeper.removed \
                and _capi.redlock_keeper_busy(self.keeper, keeper.id) == 1:
            if self.changed is None:
                self.changed = self.driver.loop.create_future()
            await asyncio.shield(self.changed)
        if self.keeper is None or keeper.removed:
            return capi.REDLOCK_ENOTHELD, "the lock is not held"
        op = _capi.redlock_keeper_extend(self.keeper, keeper.id, lease_ms, _now())
        try:
            status, message, _ = await self.driver.run(op, before_free=self._tell)
        finally:
            self._drive()
        return status, message

    def close(self) -> None:
        """The client is closed: no renewal is left running, none starts."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.timer_at = _NEVER
        if self.keeper is not None:
            _capi.redlock_keeper_free(self.keeper)
            self.keeper = None
