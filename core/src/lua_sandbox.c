/* The scene sandbox: scenes are shared between artists, so by default a
 * scene may read files anywhere but write only under the output root (every
 * write goes through out_path.c: no '..', no symbolic link followed), and
 * may not run programs, load C code or binary chunks, or use the debug
 * library. `floe run --unsafe` lifts all of it (the sandbox is then never
 * applied). Every refused call raises
 *   "sandbox: <what> is not allowed in scenes (run with --unsafe to allow)". */
#include "lua_floe.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "out_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define OUTPUT_KEY "floe.sandbox.output"
#define HINT " is not allowed in scenes (run with --unsafe to allow)"

static int refuse(lua_State *L, const char *what)
{
    return luaL_error(L, "sandbox: %s" HINT, what);
}

/* ---- paths -------------------------------------------------------------- */

static floe_output *sandbox_output(lua_State *L)
{
    lua_getfield(L, LUA_REGISTRYINDEX, OUTPUT_KEY);
    floe_output *out = lua_touserdata(L, -1);
    lua_pop(L, 1);
    return out;
}

/* "sandbox: <what> '<path>' is not allowed: <why> (run with --unsafe ...)" */
static int refuse_path(lua_State *L, const char *what, const char *path, const char *why)
{
    return luaL_error(L, "sandbox: %s '%s' is not allowed: %s (run with --unsafe to allow)", what, path, why);
}

void floe_lua_sandbox_check_write(lua_State *L, const char *path, const char *what)
{
    floe_output *out = sandbox_output(L);
    char why[1500];
    /* a folder that cannot be made for another reason fails in the run */
    if (out && out_dir_check(out, path, why, sizeof why) != 0 && (errno == EPERM || errno == ELOOP))
        refuse_path(L, what, path, why);
}

/* ---- wrapped functions -------------------------------------------------- */

/* Calls upvalue 1 (the original function) with the current arguments. */
static int call_original(lua_State *L)
{
    int n = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    return lua_gettop(L);
}

/* open(2) flags of an io.open mode that writes, or -1 (not a valid mode,
 * or read-only: the original io.open handles those). */
static int write_flags(const char *mode)
{
    if (!strchr("rwa", mode[0]))
        return -1;
    int plus = mode[1] == '+';
    if (strspn(mode + 1 + plus, "b") != strlen(mode + 1 + plus))
        return -1;
    switch (mode[0]) {
    case 'w': return (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC;
    case 'a': return (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND;
    default: return plus ? O_RDWR : -1;
    }
}

static int stream_close(lua_State *L)
{
    luaL_Stream *p = luaL_checkudata(L, 1, LUA_FILEHANDLE);
    int ok = fclose(p->f) == 0;
    return luaL_fileresult(L, ok, NULL);
}

/* A Lua file handle on path opened below the output root; raises the
 * sandbox error for a path it refuses, returns nil, message, errno for
 * other failures (like io.open). */
static int open_below_root(lua_State *L, const char *path, const char *mode, int flags)
{
    char why[1500];
    int fd = out_file_open(sandbox_output(L), path, flags, why, sizeof why);
    if (fd < 0 && (errno == EPERM || errno == ELOOP))
        return refuse_path(L, "writing to", path, why);
    if (fd < 0) {
        int e = errno;
        luaL_pushfail(L);
        lua_pushstring(L, why);
        lua_pushinteger(L, e);
        return 3;
    }
    luaL_Stream *p = lua_newuserdatauv(L, sizeof(luaL_Stream), 0);
    p->closef = NULL;
    luaL_setmetatable(L, LUA_FILEHANDLE);
    p->f = fdopen(fd, mode);
    if (!p->f) {
        close(fd);
        return luaL_error(L, "io.open: %s", strerror(errno));
    }
    p->closef = stream_close;
    return 1;
}

static int sb_io_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    const char *mode = luaL_optstring(L, 2, "r");
    int flags = write_flags(mode);
    if (flags < 0)
        return call_original(L);
    return open_below_root(L, path, mode, flags);
}

static int sb_io_output(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TSTRING) {
        const char *path = lua_tostring(L, 1);
        if (open_below_root(L, path, "w", O_WRONLY | O_CREAT | O_TRUNC) != 1)
            return luaL_error(L, "%s", lua_tostring(L, -2)); /* like io.output: an error, not nil */
        lua_replace(L, 1);
        lua_settop(L, 1);
    }
    return call_original(L);
}

/* load/loadfile: text chunks only (binary chunks can break the VM). */
static int force_text_mode(lua_State *L, int mode_arg)
{
    const char *mode = luaL_optstring(L, mode_arg, "t");
    if (strchr(mode, 'b'))
        return refuse(L, "loading binary chunks");
    if (lua_gettop(L) < mode_arg)
        lua_settop(L, mode_arg); /* keeps an absent env argument absent */
    lua_pushliteral(L, "t");
    lua_replace(L, mode_arg);
    return call_original(L);
}

static int sb_load(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TSTRING && lua_tostring(L, 1)[0] == LUA_SIGNATURE[0])
        return refuse(L, "loading binary chunks");
    return force_text_mode(L, 3);
}
static int sb_loadfile(lua_State *L) { return force_text_mode(L, 2); }

static int sb_dofile(lua_State *L)
{
    const char *path = luaL_optstring(L, 1, NULL);
    lua_settop(L, 1);
    if (luaL_loadfilex(L, path, "t") != LUA_OK)
        return lua_error(L);
    lua_call(L, 0, LUA_MULTRET);
    return lua_gettop(L) - 1;
}

/* package.searchers[2] replacement: Lua files from package.path, text only. */
static int sb_searcher_lua(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    lua_getfield(L, lua_upvalueindex(1), "searchpath");
    lua_pushstring(L, name);
    lua_getfield(L, lua_upvalueindex(1), "path");
    if (lua_type(L, -1) != LUA_TSTRING)
        return luaL_error(L, "'package.path' must be a string");
    lua_call(L, 2, 2);
    if (lua_isnil(L, -2))
        return 1; /* the "no file ..." message */
    const char *file = lua_tostring(L, -2);
    if (luaL_loadfilex(L, file, "t") != LUA_OK)
        return luaL_error(L, "error loading module '%s' from file '%s':\n\t%s", name, file, lua_tostring(L, -1));
    lua_pushstring(L, file);
    return 2;
}

static int sb_refused(lua_State *L)
{
    return refuse(L, lua_tostring(L, lua_upvalueindex(1)));
}

static int sb_debug_index(lua_State *L)
{
    lua_pushfstring(L, "debug.%s", luaL_optstring(L, 2, "?"));
    return refuse(L, lua_tostring(L, -1));
}

/* ---- installation ------------------------------------------------------- */

/* lib[name] = a function raising "sandbox: lib.name is not allowed". */
static void install_refusal(lua_State *L, const char *lib, const char *name)
{
    lua_getglobal(L, lib);
    lua_pushfstring(L, "%s.%s", lib, name);
    lua_pushcclosure(L, sb_refused, 1);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

/* table[name] = closure over the original table[name]; table on top. */
static void wrap(lua_State *L, const char *name, lua_CFunction fn)
{
    lua_getfield(L, -1, name);
    lua_pushcclosure(L, fn, 1);
    lua_setfield(L, -2, name);
}

static void install_debug_refusal(lua_State *L)
{
    lua_newtable(L);
    lua_newtable(L);
    lua_pushcfunction(L, sb_debug_index);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "sandbox");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "debug");
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_insert(L, -2);
    lua_setfield(L, -2, "debug");
    lua_pop(L, 1);
}

/* package: no C libraries; searchers = { preload, Lua files as text }. */
static void install_package(lua_State *L)
{
    lua_getglobal(L, "package");
    lua_pushliteral(L, "");
    lua_setfield(L, -2, "cpath");
    lua_getfield(L, -1, "searchers");
    lua_createtable(L, 2, 0);
    lua_rawgeti(L, -2, 1); /* the preload searcher */
    lua_rawseti(L, -2, 1);
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, sb_searcher_lua, 1);
    lua_rawseti(L, -2, 2);
    lua_setfield(L, -3, "searchers");
    lua_pop(L, 2);
    install_refusal(L, "package", "loadlib");
}

static void install_base(lua_State *L)
{
    lua_pushglobaltable(L);
    wrap(L, "load", sb_load);
    wrap(L, "loadfile", sb_loadfile);
    lua_pushcfunction(L, sb_dofile);
    lua_setfield(L, -2, "dofile");
    lua_pop(L, 1);
    lua_getglobal(L, "io");
    wrap(L, "open", sb_io_open);
    wrap(L, "output", sb_io_output);
    lua_pop(L, 1);
}

void floe_lua_sandbox_apply(lua_State *L, floe_output *out)
{
    static const char *const os_refused[] = {"execute", "exit", "remove", "rename", "tmpname", "setlocale"};
    lua_pushlightuserdata(L, out);
    lua_setfield(L, LUA_REGISTRYINDEX, OUTPUT_KEY);
    for (size_t i = 0; i < sizeof os_refused / sizeof *os_refused; i++)
        install_refusal(L, "os", os_refused[i]);
    install_refusal(L, "io", "popen");
    install_package(L);
    install_base(L);
    install_debug_refusal(L);
}
