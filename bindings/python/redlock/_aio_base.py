"""What the layers of redlock.asyncio share: the engine's calls made on every
reply, the bits of what it asks of a run, and its "never"."""

from __future__ import annotations

from . import _capi, capi

_now = capi.redlock_now_ms
# The engine's calls made on every reply go straight to the extension module
# (the generated capi.py wraps each in one more Python call).
_received = _capi.redlock_conn_received
_output = _capi.redlock_conn_output
_wrote = _capi.redlock_conn_wrote
_op_drive = _capi.redlock_op_drive
_op_next_wanted = _capi.redlock_op_next_wanted
_op_react = _capi.redlock_op_react

# What the engine asks of a run (redlock_op_drive's bits).
_CONNECT = capi.REDLOCK_DRIVE_CONNECT
_WRITE = capi.REDLOCK_DRIVE_WRITE
_AWAITS = capi.REDLOCK_DRIVE_AWAITS
_DONE = capi.REDLOCK_DRIVE_DONE
_TAIL = capi.REDLOCK_DRIVE_TAIL

# The engine's "never" (INT64_MAX), and anything beyond.
_NEVER = 2**62
