-- redlock._ctx: when the C context and the locks' handles are freed
-- (private to redlock.lua).
local core = require "redlock_core"

-- An object whose collection runs fn: a userdata in Lua 5.1 and LuaJIT,
-- where tables have no __gc, a table elsewhere.
local function finalizer(fn)
  if newproxy then
    local proxy = newproxy(true)
    getmetatable(proxy).__gc = fn
    return proxy
  end
  return setmetatable({}, { __gc = fn })
end

-- The C context outlives every handle made from it: it is freed once the
-- client is closed (or collected) and its last handle is freed.
-- Inside nginx its connections go first: the idle ones at once, the others
-- when their readers end.
local function release_ctx(ctx)
  if not (ctx.closed and ctx.handles == 0 and ctx.ptr) or ctx.releasing then
    return
  end
  local d = ctx.drv
  if d then
    ctx.releasing = true
    for node, pool in pairs(d.idle) do
      for _, io in ipairs(pool) do
        io.freed = true
        core.redlock_conn_free(io.conn)
        d.live = d.live - 1
      end
      d.idle[node] = {}
    end
    ctx.releasing = false
    if d.live > 0 then
      return
    end
  end
  core.redlock_ctx_free(ctx.ptr)
  ctx.ptr = nil
  -- After the ctx: nothing can queue an event any more.
  core.redlock_lua_log_free(ctx.events)
  ctx.events = nil
end

-- Frees the lock's C handle. A kept lock's renewal ends with it: outside
-- nginx redlock_handle_free stops the C thread's renewal (waiting for an
-- extension under way), after which its lost record can go; inside nginx
-- no extension is under way here (see stop_keeping).
local function drop_handle(state)
  if state.handle then
    local hold = state.hold
    if hold then
      hold.kept, hold.handle = false, nil
    end
    core.redlock_handle_free(state.handle)
    if hold and hold.watch then
      core.redlock_lua_watch_free(hold.watch)
      hold.watch = nil
    end
    state.handle = nil
    state.ctx.handles = state.ctx.handles - 1
    state.ctx.held[state] = nil
    release_ctx(state.ctx)
  end
end

return {
  finalizer = finalizer,
  release_ctx = release_ctx,
  drop_handle = drop_handle,
}
