/*
 * swig/lua.i - the Lua native module `redlock_core` (Lua 5.1/LuaJIT and 5.4).
 *
 * The raw module mirrors the C API: every function returns its int status
 * first, then the output parameter (the new ctx or handle, nil on failure).
 * Pointers come back unowned; bindings/lua/redlock.lua frees them. Times are
 * integers of milliseconds; a non-integral or out-of-range time, or a list
 * holding something other than strings, is a Lua error, never a crash.
 */
%module redlock_core

/* SWIG defines the entry point without declaring it first. */
%header %{
SWIGEXPORT int luaopen_redlock_core(lua_State *L);
%}

/* Status codes and counts come back as Lua integers. */
%typemap(out) int %{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* Output parameters: return the status, then the object or nil. */
%typemap(in, numinputs=0) redlock_ctx **out (redlock_ctx *temp = NULL),
                          redlock_handle **out (redlock_handle *temp = NULL)
%{ $1 = &temp; %}

%typemap(argout) redlock_ctx **out, redlock_handle **out {
  if (*$1) {
    SWIG_NewPointerObj(L, *$1, $*descriptor, 0);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

/* Messages number the arguments as Lua sees them ($input), without the
 * output parameters. */

/* A list of strings from a Lua array. The pointer array lives in a userdata
 * left on the stack, so a Lua error part-way leaks nothing; the strings stay
 * alive because the table holding them is an argument of the call. */
%typemap(in) (const char *const *node_uris, size_t n_nodes),
             (const char *const *resources, size_t n_resources) {
  const char **items;
  size_t i, n;
  if (!lua_istable(L, $input)) {
    return luaL_error(L, "bad argument #%d to '$symname' (table expected, got %s)",
                      $input, luaL_typename(L, $input));
  }
  n = lua_rawlen(L, $input);
  items = (const char **)lua_newuserdata(L, (n > 0 ? n : 1) * sizeof(*items));
  for (i = 0; i < n; i++) {
    lua_rawgeti(L, $input, (int)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      return luaL_error(L, "bad argument #%d to '$symname' (item %d is %s, string expected)",
                        $input, (int)i + 1, luaL_typename(L, -1));
    }
    items[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  $1 = ($1_ltype)items;
  $2 = n;
}

/* Times: whole numbers of milliseconds that an int64_t holds exactly. */
%typemap(in, checkfn="lua_isnumber") int64_t {
  lua_Number ms = lua_tonumber(L, $input);
  if (!(ms >= -9007199254740992.0 && ms <= 9007199254740992.0) ||
      (lua_Number)(int64_t)ms != ms) {
    return luaL_error(L, "bad argument #%d to '$symname' (whole number of milliseconds expected)",
                      $input);
  }
  $1 = (int64_t)ms;
}
%typemap(out) int64_t %{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* redlock_ctx_get_option returns the status, then the value (or nil). */
%typemap(in, numinputs=0) (char *buf, size_t buflen) (char temp[4200]) %{
  temp[0] = '\0';
  $1 = temp;
  $2 = sizeof(temp);
%}
%typemap(argout) (char *buf, size_t buflen) %{
  if (result == REDLOCK_OK) {
    lua_pushstring(L, $1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
%}

%include "redlock.i"

/* ---- The engine (redlock_engine.h, experimental), for the cosocket driver
 * in redlock.lua ----
 *
 * An operation is a SWIG pointer; a connection is a light userdata, so that
 * the driver can key its own state by it (the same pointer is the same Lua
 * value). Constructors return the status, then the object or nil. The
 * connection's bytes go out and come in as Lua strings. */
%{
#include "redlock_engine.h"
%}
%nodefaultctor redlock_op;
%nodefaultdtor redlock_op;

%typemap(in, numinputs=0) redlock_op **out (redlock_op *temp = NULL) %{ $1 = &temp; %}
%typemap(argout) redlock_op **out {
  if (*$1) {
    SWIG_NewPointerObj(L, *$1, $*descriptor, 0);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

%typemap(in, checkfn="lua_islightuserdata") redlock_conn *c, const redlock_conn *c
%{ $1 = ($1_ltype)lua_touserdata(L, $input); %}
%typemap(out) redlock_conn * %{
  if ($1) {
    lua_pushlightuserdata(L, (void *)$1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
%}
%typemap(in, numinputs=0) redlock_conn **out (redlock_conn *temp = NULL) %{ $1 = &temp; %}
%typemap(argout) redlock_conn **out {
  if (*$1) {
    lua_pushlightuserdata(L, (void *)*$1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

%typemap(out) size_t %{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* redlock_conn_output returns the bytes to write ("" when none). */
%typemap(in, numinputs=0) const char **bytes (const char *temp = NULL) %{ $1 = ($1_ltype)&temp; %}
%typemap(out) size_t redlock_conn_output %{
  lua_pushlstring(L, temp2 ? temp2 : "", (size_t)$1);
  SWIG_arg++;
%}

/* redlock_conn_received takes what was read, as a Lua string. */
%typemap(in, checkfn="lua_isstring") (const char *bytes, size_t len) {
  size_t n = 0;
  $1 = ($1_ltype)lua_tolstring(L, $input, &n);
  $2 = n;
}

%include "redlock_engine.h"
