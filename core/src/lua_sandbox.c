/* The scene sandbox: scenes are shared between artists, so by default a
 * scene may read files anywhere but write only under the output root, and
 * may not run programs, load C code or binary chunks, or use the debug
 * library. `floe run --unsafe` lifts all of it (the sandbox is then never
 * applied). Every refused call raises
 *   "sandbox: <what> is not allowed in scenes (run with --unsafe to allow)". */
#include "lua_floe.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define ROOT_KEY "floe.sandbox.root"
#define HINT " is not allowed in scenes (run with --unsafe to allow)"

static int refuse(lua_State *L, const char *what)
{
    return luaL_error(L, "sandbox: %s" HINT, what);
}

/* ---- paths -------------------------------------------------------------- */

/* Lexically normalise path into an absolute one (relative to the working
 * directory): drops "." and empty components. A ".." component pops one
 * component when allow_up, else fails. Returns 0 on success. */
static int path_normalise(const char *path, int allow_up, char *out, size_t len)
{
    char buf[2 * PATH_MAX];
    if (path[0] == '/')
        snprintf(buf, sizeof buf, "%s", path);
    else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return -1;
        snprintf(buf, sizeof buf, "%s/%s", cwd, path);
    }
    size_t n = 0;
    out[0] = '\0';
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (strcmp(c, ".") == 0)
            continue;
        if (strcmp(c, "..") == 0) {
            if (!allow_up)
                return -1;
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
            out[n] = '\0';
            continue;
        }
        size_t cl = strlen(c);
        if (n + cl + 2 > len)
            return -1;
        out[n++] = '/';
        memcpy(out + n, c, cl + 1);
        n += cl;
    }
    if (n == 0)
        snprintf(out, len, "/");
    return 0;
}

/* 1 if path lies under (or is) root; both already normalised. */
static int path_under(const char *path, const char *root)
{
    size_t rl = strlen(root);
    if (strcmp(root, "/") == 0)
        return 1;
    return strncmp(path, root, rl) == 0 && (path[rl] == '\0' || path[rl] == '/');
}

void floe_lua_sandbox_check_write(lua_State *L, const char *path, const char *what)
{
    lua_getfield(L, LUA_REGISTRYINDEX, ROOT_KEY);
    const char *root = lua_tostring(L, -1);
    if (!root) { /* no sandbox */
        lua_pop(L, 1);
        return;
    }
    char norm[PATH_MAX];
    if (path_normalise(path, 0, norm, sizeof norm) != 0 || !path_under(norm, root)) {
        lua_pushfstring(L, "%s '%s' (outside the output root '%s', or with a '..' component)", what, path, root);
        refuse(L, lua_tostring(L, -1));
    }
    lua_pop(L, 1);
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

static int mode_writes(const char *mode)
{
    return strpbrk(mode, "wa+") != NULL;
}

static int sb_io_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    if (mode_writes(luaL_optstring(L, 2, "r")))
        floe_lua_sandbox_check_write(L, path, "writing to");
    return call_original(L);
}

static int sb_io_output(lua_State *L)
{
    if (lua_type(L, 1) == LUA_TSTRING)
        floe_lua_sandbox_check_write(L, lua_tostring(L, 1), "writing to");
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

void floe_lua_sandbox_apply(lua_State *L, const char *out_root)
{
    static const char *const os_refused[] = {"execute", "exit", "remove", "rename", "tmpname", "setlocale"};
    char root[PATH_MAX];
    if (path_normalise(out_root ? out_root : "out", 1, root, sizeof root) != 0)
        luaL_error(L, "sandbox: cannot resolve the output root '%s'", out_root ? out_root : "out");
    lua_pushstring(L, root);
    lua_setfield(L, LUA_REGISTRYINDEX, ROOT_KEY);
    for (size_t i = 0; i < sizeof os_refused / sizeof *os_refused; i++)
        install_refusal(L, "os", os_refused[i]);
    install_refusal(L, "io", "popen");
    install_package(L);
    install_base(L);
    install_debug_refusal(L);
}
