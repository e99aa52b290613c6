-- redlock._events: the client's events and the binding's own messages
-- (private to redlock.lua).
local core = require "redlock_core"

local ngx = rawget(_G, "ngx")

---------------------------------------------------------------------------
-- Events: the C library's (redlock_ctx_set_log), and those of the renewal
-- inside nginx, which is Lua's own.
--
-- The C hook only queues the events (swig/lua.i: it may run on the client's
-- own thread, where Lua must not be entered); they come out here on the Lua
-- thread, at the start and the end of every call into the client or its
-- locks, and go to the client's sink: the option `log`, a function called as
-- log(level, event, message) with level "debug", "info", "warn" or "error";
-- inside nginx without one, ngx.log (DEBUG, INFO, WARN, ERR), "redlock: "
-- followed by the event's name and message. The option `log_level` is the
-- least level sent: by default "info" for a `log` function, and inside
-- nginx the level of its error_log (as ngx.errlog tells it; "warn" when it
-- cannot). A sink that raises an error is reported (ngx.log or stderr), not
-- raised into the call.

local LOG_LEVELS = { debug = core.REDLOCK_LOG_DEBUG, info = core.REDLOCK_LOG_INFO,
                     warn = core.REDLOCK_LOG_WARN, error = core.REDLOCK_LOG_ERROR }
local LEVEL_NAMES = {}
for name, level in pairs(LOG_LEVELS) do
  LEVEL_NAMES[level] = name
end

-- Where messages about the binding itself go: nginx's error log, or stderr.
local function report(what, problem)
  if ngx then
    ngx.log(ngx.ERR, "redlock: ", what, " failed: ", problem)
  else
    io.stderr:write("redlock: ", what, " failed: ", tostring(problem), "\n")
  end
end

-- The least level nginx logs, as one of ours (nil: nothing of ours).
local function nginx_level()
  local ok, errlog = pcall(require, "ngx.errlog")
  local level = ok and errlog.get_sys_filter_level and select(2, pcall(errlog.get_sys_filter_level))
  if not level then
    return core.REDLOCK_LOG_WARN
  end
  if level >= ngx.DEBUG then
    return core.REDLOCK_LOG_DEBUG
  elseif level >= ngx.INFO then
    return core.REDLOCK_LOG_INFO
  elseif level >= ngx.WARN then
    return core.REDLOCK_LOG_WARN
  elseif level >= ngx.ERR then
    return core.REDLOCK_LOG_ERROR
  end
end

local function nginx_sink(level, event, message)
  local nginx = { debug = ngx.DEBUG, info = ngx.INFO, warn = ngx.WARN, error = ngx.ERR }
  ngx.log(nginx[level], "redlock: ", event, " ", message)
end

-- Control bytes (below 0x20, and 0x7f) as the C library escapes them in its
-- events: \n, \r, \t, else \xNN. An event is one line of a log, always.
local ESCAPES = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
local function escape(text)
  return (tostring(text):gsub("[%c\127]", function(c)
    return ESCAPES[c] or ("\\x%02x"):format(c:byte())
  end))
end

-- Sends one event to ctx's sink, if it has one and the level reaches it
-- (the C library escapes control bytes already; escaped here too).
local function emit(ctx, level, event, message)
  if ctx.sink and level >= ctx.log_level then
    event, message = escape(event), escape(message)
    local ok, problem = pcall(ctx.sink, LEVEL_NAMES[level] or tostring(level), event, message)
    if not ok then
      report("the log function", problem)
    end
  end
end

-- Sends the events the C library queued for ctx to its sink.
local function drain_events(ctx)
  local q = ctx.events
  if not q or ctx.draining then
    return
  end
  ctx.draining = true   -- a sink that calls into the client does not drain again
  while true do
    local level = core.redlock_lua_log_pop(q)
    if level == 0 then
      break
    end
    emit(ctx, level, core.redlock_lua_log_event(q), core.redlock_lua_log_message(q))
  end
  ctx.draining = false
end

return {
  LOG_LEVELS = LOG_LEVELS,
  report = report,
  nginx_level = nginx_level,
  nginx_sink = nginx_sink,
  drain_events = drain_events,
}
