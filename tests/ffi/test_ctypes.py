"""The raw ABI through ctypes: libredlock.so.1 is callable from any FFI, with
no glue code. REDLOCK_LIB names the built library:

    REDLOCK_LIB=build/core/libredlock.so.1 python3 -m pytest tests/ffi/test_ctypes.py
"""

import ctypes
import os
import re
from pathlib import Path

import pytest
from conftest import get_key

ROOT = Path(__file__).resolve().parents[2]

# Status codes, as published in redlock.h.
OK, ELOCKED, ENOTHELD, EINVAL = 0, -1, -3, -4


@pytest.fixture(scope="module")
def lib():
    path = os.environ.get("REDLOCK_LIB")
    if not path:
        pytest.skip("REDLOCK_LIB is not set: point it at the built libredlock.so.1")
    lib = ctypes.CDLL(path)
    ctx_p = ctypes.c_void_p
    handle_p = ctypes.c_void_p
    lib.redlock_ctx_new.argtypes = [ctypes.POINTER(ctx_p), ctypes.POINTER(ctypes.c_char_p),
                                    ctypes.c_size_t]
    lib.redlock_ctx_set_option.argtypes = [ctx_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.redlock_ctx_free.argtypes = [ctx_p]
    lib.redlock_ctx_free.restype = None
    lib.redlock_lock.argtypes = [ctypes.POINTER(handle_p), ctx_p, ctypes.c_char_p,
                                 ctypes.c_int64, ctypes.c_int64]
    lib.redlock_lock_multi.argtypes = [ctypes.POINTER(handle_p), ctx_p,
                                       ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t,
                                       ctypes.c_int64, ctypes.c_int64]
    lib.redlock_extend.argtypes = [handle_p, ctypes.c_int64]
    lib.redlock_unlock.argtypes = [handle_p]
    lib.redlock_handle_free.argtypes = [handle_p]
    lib.redlock_handle_free.restype = None
    lib.redlock_handle_validity_ms.argtypes = [handle_p]
    lib.redlock_handle_validity_ms.restype = ctypes.c_int64
    lib.redlock_handle_token.argtypes = [handle_p]
    lib.redlock_handle_token.restype = ctypes.c_char_p
    lib.redlock_strerror.argtypes = [ctypes.c_int]
    lib.redlock_strerror.restype = ctypes.c_char_p
    lib.redlock_errmsg.restype = ctypes.c_char_p
    lib.redlock_version_string.restype = ctypes.c_char_p
    return lib


def new_ctx(lib, uris):
    array = (ctypes.c_char_p * len(uris))(*[u.encode() for u in uris])
    ctx = ctypes.c_void_p()
    assert lib.redlock_ctx_new(ctypes.byref(ctx), array, len(uris)) == OK
    assert ctx.value is not None
    assert lib.redlock_ctx_set_option(ctx, b"key_prefix", b"ffi:") == OK
    return ctx


def test_version_matches_the_header(lib):
    header = (ROOT / "abi" / "redlock.h").read_text()
    version = re.search(r'#define REDLOCK_VERSION_STRING "([^"]+)"', header).group(1)
    assert lib.redlock_version_string().decode() == version
    major, minor, patch = map(int, version.split("."))
    assert lib.redlock_version_number() == major * 10000 + minor * 100 + patch


def test_lock_extend_unlock(lib, uris):
    ctx = new_ctx(lib, uris)
    other = new_ctx(lib, uris)
    handle = ctypes.c_void_p()
    try:
        assert lib.redlock_lock(ctypes.byref(handle), ctx, b"job", 10000, 0) == OK
        token = lib.redlock_handle_token(handle).decode()
        assert re.fullmatch(r"[0-9a-f]{32}", token)
        assert [get_key(uri, "ffi:job") for uri in uris] == [token] * 3
        assert 9000 < lib.redlock_handle_validity_ms(handle) <= 10000

        refused = ctypes.c_void_p(1)
        assert lib.redlock_lock(ctypes.byref(refused), other, b"job", 10000, 0) == ELOCKED
        assert refused.value is None
        assert b"job" in lib.redlock_errmsg()

        assert lib.redlock_extend(handle, 60000) == OK
        assert lib.redlock_handle_validity_ms(handle) > 59000

        assert lib.redlock_unlock(handle) == OK
        assert lib.redlock_handle_validity_ms(handle) <= 0
        assert [get_key(uri, "ffi:job") for uri in uris] == [""] * 3
        assert lib.redlock_unlock(handle) == ENOTHELD
        assert lib.redlock_extend(handle, 1000) == ENOTHELD
    finally:
        lib.redlock_handle_free(handle)
        lib.redlock_ctx_free(other)
        lib.redlock_ctx_free(ctx)


def test_lock_multi(lib, uris):
    ctx = new_ctx(lib, uris)
    names = (ctypes.c_char_p * 2)(b"a", b"b")
    handle = ctypes.c_void_p()
    try:
        assert lib.redlock_lock_multi(ctypes.byref(handle), ctx, names, 2, 10000, 0) == OK
        token = lib.redlock_handle_token(handle).decode()
        assert [get_key(uri, "ffi:b") for uri in uris] == [token] * 3
        assert lib.redlock_unlock(handle) == OK
    finally:
        lib.redlock_handle_free(handle)
        lib.redlock_ctx_free(ctx)


def test_errors(lib):
    ctx = ctypes.c_void_p(1)
    array = (ctypes.c_char_p * 1)(b"rediss://127.0.0.1:0")
    assert lib.redlock_ctx_new(ctypes.byref(ctx), array, 1) == EINVAL
    assert ctx.value is None
    assert b"rediss://" in lib.redlock_errmsg()
    assert lib.redlock_strerror(EINVAL) == b"invalid argument"
    # Every _free accepts NULL.
    lib.redlock_ctx_free(None)
    lib.redlock_handle_free(None)
    assert lib.redlock_handle_validity_ms(None) == 0
    assert lib.redlock_handle_token(None) is None


def test_what_bindings_read_from_the_library(lib):
    """1.3: a double in, an int64_t and texts out, through plain libffi."""
    lib.redlock_arg_check.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int,
                                      ctypes.c_char_p, ctypes.c_double]
    lib.redlock_option_name.restype = ctypes.c_char_p
    lib.redlock_option_name.argtypes = [ctypes.c_size_t]
    lib.redlock_option_default.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.redlock_uri_list_count.restype = ctypes.c_size_t
    lib.redlock_uri_list_item.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                          ctypes.c_size_t]
    lease, lease_rule = 2, ctypes.c_int64(0)
    assert lib.redlock_arg_check(ctypes.byref(lease_rule), lease, None, 1.1 * 1000) == OK
    assert lease_rule.value == 1100
    assert lib.redlock_arg_check(None, lease, b"lease", -1000.0) == EINVAL
    assert lib.redlock_errmsg() == (b"lease must be a time above 0 ms and at most 2147483647 ms, "
                                    b"not -1000 ms")
    names = [lib.redlock_option_name(i) for i in range(lib.redlock_option_count())]
    assert names[0] == b"node_timeout_ms" and lib.redlock_option_name(len(names)) is None
    buf = ctypes.create_string_buffer(64)
    assert lib.redlock_option_default(b"watchdog_lease_ms", buf, 64) == OK
    assert buf.value == b"30000"
    assert lib.redlock_uri_list_count(b" ,redis://a") == 2
    assert lib.redlock_uri_list_item(b" ,redis://a", 0, buf, 64) == EINVAL
    assert lib.redlock_errmsg() == b"URI 1 of the list of nodes is empty"
