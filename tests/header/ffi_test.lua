-- ffi_test.lua HEADER [LIBRARY]: ffi.cdef the preprocessed header; with a
-- library, resolve every function and call a few through the FFI, no glue.
local ffi = require("ffi")

local header, library = arg[1], arg[2]
local f = assert(io.open(header, "r"))
ffi.cdef(f:read("*a"))
f:close()

if library == nil or library == "" then
  print("declarations read; no library to call")
  os.exit(0)
end

local lib = ffi.load(library)
for _, name in ipairs({
  "redlock_ctx_new", "redlock_ctx_set_option", "redlock_ctx_free", "redlock_lock",
  "redlock_lock_multi", "redlock_extend", "redlock_unlock", "redlock_handle_free",
  "redlock_handle_validity_ms", "redlock_handle_token", "redlock_strerror",
  "redlock_errmsg", "redlock_version_string", "redlock_version_number",
  "redlock_ctx_get_option", "redlock_set_interrupt_check",
  "redlock_now_ms", "redlock_ctx_node_count", "redlock_op_lock", "redlock_op_step",
  "redlock_op_take_conn", "redlock_conn_new", "redlock_conn_output", "redlock_conn_received",
}) do
  local ok, err = pcall(function() return lib[name] end)
  assert(ok, err)
end

local major, minor, patch = ffi.string(lib.redlock_version_string()):match("^(%d+)%.(%d+)%.(%d+)$")
assert(major, "bad version string")
assert(lib.redlock_version_number() == major * 10000 + minor * 100 + patch)

local out = ffi.new("redlock_ctx *[1]")
local bad = ffi.new("const char *[1]", { "redis://127.0.0.1:abc" })
assert(lib.redlock_ctx_new(out, bad, 1) == -4)
assert(out[0] == nil)
assert(#ffi.string(lib.redlock_errmsg()) > 0)

local good = ffi.new("const char *[2]", { "redis://127.0.0.1:7001", "unix:///tmp/redlock-none.sock" })
assert(lib.redlock_ctx_new(out, good, 2) == 0)
assert(out[0] ~= nil)
assert(lib.redlock_ctx_set_option(out[0], "key_prefix", "ffi:") == 0)
assert(lib.redlock_ctx_set_option(out[0], "no_such_option", "1") == -4)
lib.redlock_ctx_free(out[0])
assert(lib.redlock_handle_validity_ms(nil) == 0)
assert(ffi.string(lib.redlock_strerror(-1)) ~= ffi.string(lib.redlock_strerror(0)))
print("ok")
