"""redlock.asyncio's TLS: the loop's own (``ssl.SSLContext``, with Python's
OpenSSL), with the settings the C library's blocking calls use, and a failed
connect told as the C library tells it."""

from __future__ import annotations

import ssl
from typing import Any, Tuple

from . import _capi, capi


class _TLSFailure(Exception):
    """The client's TLS settings cannot be made (a file of the options)."""


def _tls_context(ctx: Any) -> ssl.SSLContext:
    """An SSLContext with the settings the C library's own TLS takes from
    the tls_* options (redlock_ctx_tls_*): they are the library's, only
    applied here to Python's ssl."""
    if _capi.redlock_ctx_tls_check(ctx) != capi.REDLOCK_OK:
        raise _TLSFailure(_capi.redlock_errmsg())
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion(_capi.redlock_ctx_tls_min_version(ctx))
    ca_file, ca_dir = _capi.redlock_ctx_tls_ca_file(ctx), _capi.redlock_ctx_tls_ca_dir(ctx)
    cert, key = _capi.redlock_ctx_tls_cert_file(ctx), _capi.redlock_ctx_tls_key_file(ctx)
    what = ""
    try:
        if not _capi.redlock_ctx_tls_verify(ctx):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif ca_file or ca_dir:
            what = "tls_ca_file" if ca_file else "tls_ca_dir"
            context.load_verify_locations(cafile=ca_file, capath=ca_dir)
        else:
            what = "the system's CA certificates"
            context.set_default_verify_paths()
        if cert:
            what = "tls_cert_file"
            # No passphrase: OpenSSL would otherwise ask the terminal for one.
            context.load_cert_chain(cert, key, password=lambda: b"")
    except ssl.SSLError as error:
        raise _TLSFailure(f"{what}: cannot load the certificates or key "
                          f"({error.reason or error})") from None
    return context


def _connect_failure(error: BaseException) -> Tuple[str, bool]:
    """Why a connect failed, and whether it is TLS's failure."""
    if isinstance(error, _TLSFailure):
        return str(error), True
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS certificate check failed: {error.verify_message}", True
    if isinstance(error, ssl.SSLError):
        return f"TLS handshake failed: {error.reason or error}", True
    return f"cannot connect: {error}", False
