"""What the layers of redlock.asyncio share: the engine's calls made on every
reply, the bits of what it asks of a run, and its "never"."""

from __future__ import annotations

from . import _capi, capi

_now = _capi.redlock_now_ms
# The engine's calls made on every reply go straight to the extension module
# (the generated capi.py wraps each in one more Python call).
_received = _capi.redlock_conn_received
_output = _capi.redlock_conn_output
_wrote = _capi.redlock_conn_wrote
_op_drive = _capi.redlock_op_drive
_op_next_wanted = _capi.redlock_op_next_wanted
_op_react = _capi.redlock_op_react
# A plain connection's socket, read and written by the C library.
_conn_read = _capi.redlock_py_conn_read
_conn_send = _capi.redlock_py_conn_send
# An idle connection offered to an operation.
_op_reuse = _capi.redlock_py_op_reuse

# What redlock_py_conn_read says.
_READ = capi.REDLOCK_PY_READ
_BROKEN = capi.REDLOCK_PY_BROKEN
_NOTHING = capi.REDLOCK_PY_NOTHING
_EOF = capi.REDLOCK_PY_EOF

# What redlock_py_op_reuse says.
_REUSE_ATTACHED = capi.REDLOCK_PY_ATTACHED
_REUSE_IDLE = capi.REDLOCK_PY_IDLE
_REUSE_FRESH = capi.REDLOCK_PY_FRESH
_REUSE_BROKEN = capi.REDLOCK_PY_BROKEN
_REUSE_MOVED = capi.REDLOCK_PY_MOVED

# What the engine asks of a run (redlock_op_drive's bits).
_CONNECT = capi.REDLOCK_DRIVE_CONNECT
_WRITE = capi.REDLOCK_DRIVE_WRITE
_AWAITS = capi.REDLOCK_DRIVE_AWAITS
_DONE = capi.REDLOCK_DRIVE_DONE
_TAIL = capi.REDLOCK_DRIVE_TAIL

# The engine's "never" (INT64_MAX), and anything beyond.
_NEVER = 2**62
