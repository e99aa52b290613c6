-- redlock._errors: the errors of the Lua binding (private to redlock.lua).
local core = require "redlock_core"

-- Error names from the header's codes: REDLOCK_ELOCKED is "locked" and is
-- also published as redlock.ELOCKED (codes.ELOCKED here).
local error_names = {}
local codes = {}
for key, value in pairs(core) do
  local suffix = type(key) == "string" and key:match("^REDLOCK_(E%u+)$")
  if suffix then
    error_names[value] = suffix:sub(2):lower()
    codes[suffix] = value
  end
end

-- An error is a string, as in every cosocket library: the code's word
-- ("locked", "noquorum", "notheld": error_names), ": ", the description and
-- the C library's detail (which nodes, and why). Every failure returns nil,
-- the error and the code's word: the word needs no parsing.

-- The error for status `code`, with the C library's detail for this thread's
-- last failure unless `detail` is given; and the code's word.
local function make_error(code, detail)
  detail = detail or core.redlock_errmsg()
  local name = error_names[code] or "unknown"
  local message = name .. ": " .. core.redlock_strerror(code)
  if detail ~= "" then
    message = message .. " (" .. detail .. ")"
  end
  return message, name
end

-- The code's word of an error of ours ("locked" of "locked: ...").
local function code_of(err)
  return type(err) == "string" and err:match("^(%l+): ") or nil
end

-- What a call that failed returns: nil, the error and the code's word.
local function fail(err)
  return nil, err, code_of(err)
end

return {
  error_names = error_names,
  codes = codes,
  make_error = make_error,
  code_of = code_of,
  fail = fail,
}
