/* floe_scene_run: runs a Lua scene script in a fresh Lua state, sandboxed
 * unless opt->unsafe, with the `floe` module preloaded and package.path
 * reaching lua/ of the source tree, the installed Lua folder and the
 * scene's own folder. */
#include "lua_floe.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#ifndef FLOE_SOURCE_LUA_DIR
#define FLOE_SOURCE_LUA_DIR "lua"
#endif
#ifndef FLOE_INSTALL_LUA_DIR
#define FLOE_INSTALL_LUA_DIR "/usr/local/share/floe/lua"
#endif

#define TRACEBACK_LINES 8
#define OUTPUT_KEY "floe.output"
#define HOOK_COUNT 10000 /* VM instructions between checks for Ctrl-C and the time limit */

/* 64-bit FNV-1a of the file's bytes as 16 hex digits. */
static int scene_hash(const char *path, char hash[17], char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open the scene: %s", path, strerror(errno));
        return FLOE_ERR_IO;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    unsigned char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++)
            h = (h ^ buf[i]) * 0x100000001b3ull;
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: cannot read the scene", path);
        return FLOE_ERR_IO;
    }
    snprintf(hash, 17, "%016" PRIx64, h);
    return FLOE_OK;
}

static void scene_dir(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == path)
        snprintf(dir, len, "/");
    else
        snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/* package.path += source, install and scene folders. */
static void add_paths(lua_State *L, const char *dir)
{
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s;%s/?.lua;%s/?/init.lua;%s/?.lua;%s/?/init.lua;%s/?.lua;%s/?/init.lua",
                    lua_tostring(L, -1), FLOE_SOURCE_LUA_DIR, FLOE_SOURCE_LUA_DIR, FLOE_INSTALL_LUA_DIR,
                    FLOE_INSTALL_LUA_DIR, dir, dir);
    lua_setfield(L, -3, "path");
    lua_pop(L, 2);
}

/* Ctrl-C, SIGTERM and the wall-time limit reach Lua code too (a scene
 * stuck in `while true do end`, a slow set-up). */
static void stop_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    int why = floe_stop_pending();
    if (why == FLOE_OK)
        return;
    luaL_where(L, 0); /* level 0 in a hook: the Lua function that was running */
    lua_pushstring(L, why == FLOE_ERR_INTERRUPT ? "interrupted" : "the wall-time limit (--timeout) was reached");
    lua_concat(L, 2);
    lua_error(L);
}

/* Protected set-up: (opts, hash, output) as arguments. */
static int scene_setup(lua_State *L)
{
    const floe_scene_opts *opt = lua_touserdata(L, 1);
    const char *hash = lua_tostring(L, 2);
    floe_output *out = lua_touserdata(L, 3);
    lua_pushlightuserdata(L, out);
    lua_setfield(L, LUA_REGISTRYINDEX, OUTPUT_KEY); /* lua_sim.c attaches it to every sim */
    char dir[4096];
    scene_dir(opt->path, dir, sizeof dir);
    luaL_openlibs(L);
    floe_lua_scene_init(L, opt, dir, hash);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    lua_pushcfunction(L, luaopen_floe);
    lua_setfield(L, -2, "floe");
    lua_pop(L, 1);
    add_paths(L, dir);
    if (!opt->unsafe)
        floe_lua_sandbox_apply(L, out);
    return 0;
}

static int msg_handler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (!msg) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

/* The message, then at most TRACEBACK_LINES lines of the traceback. */
static void copy_error(const char *text, char *err, size_t errlen)
{
    const char *tb = strstr(text, "\nstack traceback:");
    const char *end = tb ? tb + 1 : text + strlen(text);
    for (int lines = 0; tb && *end && lines <= TRACEBACK_LINES; lines++) {
        const char *nl = strchr(end, '\n');
        end = nl ? nl + 1 : end + strlen(end);
    }
    size_t n = (size_t)(end - text);
    while (n > 0 && text[n - 1] == '\n')
        n--;
    snprintf(err, errlen, "%.*s", (int)n, text);
}

static int scene_exec(lua_State *L, const char *path, char *err, size_t errlen)
{
    lua_pushcfunction(L, msg_handler);
    int h = lua_gettop(L);
    if (luaL_loadfilex(L, path, "t") != LUA_OK) {
        copy_error(lua_tostring(L, -1), err, errlen);
        return FLOE_ERR_ARG;
    }
    if (lua_pcall(L, 0, 0, h) != LUA_OK) {
        copy_error(lua_tostring(L, -1), err, errlen);
        int st = floe_lua_scene_status(L);
        if (st == FLOE_OK)
            st = floe_stop_pending(); /* stopped in Lua code by the hook */
        return st != FLOE_OK ? st : FLOE_ERR_ARG;
    }
    lua_settop(L, h - 1);
    return floe_lua_scene_unused(L, err, errlen);
}

FLOE_EXPORT int floe_scene_run(const floe_scene_opts *opt, char *err, size_t errlen)
{
    char hash[17], dummy[8];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!opt || !opt->path || !opt->path[0]) {
        snprintf(err, errlen, "floe_scene_run: no scene path");
        return FLOE_ERR_ARG;
    }
    if (!(opt->timeout_s >= 0) || opt->timeout_s > 1e9) {
        snprintf(err, errlen, "floe_scene_run: timeout must be in [0, 1e9] seconds");
        return FLOE_ERR_ARG;
    }
    /* a stop asked for from here on (even during the set-up) ends the scene */
    floe_stop_reset(opt->timeout_s);
    int rc = scene_hash(opt->path, hash, err, errlen);
    if (rc != FLOE_OK)
        return rc;
    char oerr[2048];
    unsigned flags = (opt->unsafe ? 0 : FLOE_OUTPUT_CONFINE) | (opt->force ? FLOE_OUTPUT_FORCE : 0);
    const char *root = opt->resume ? opt->resume : opt->out_dir ? opt->out_dir : "out";
    if (opt->resume)
        flags |= FLOE_OUTPUT_RESUME;
    if (opt->write_frames == 0) /* floe bench */
        flags |= FLOE_OUTPUT_BENCH;
    floe_output *out = floe_output_create(root, flags, oerr, sizeof oerr);
    if (!out) {
        snprintf(err, errlen, "%s: %s", opt->path, oerr);
        return FLOE_ERR_IO;
    }
    lua_State *L = luaL_newstate();
    if (!L) {
        snprintf(err, errlen, "%s: cannot create a Lua state", opt->path);
        floe_output_destroy(out);
        return FLOE_ERR_NOMEM;
    }
    lua_sethook(L, stop_hook, LUA_MASKCOUNT, HOOK_COUNT);
    lua_pushcfunction(L, scene_setup);
    lua_pushlightuserdata(L, (void *)opt);
    lua_pushstring(L, hash);
    lua_pushlightuserdata(L, out);
    if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
        snprintf(err, errlen, "%s: %s", opt->path, lua_tostring(L, -1));
        rc = FLOE_ERR_ARG;
    } else
        rc = scene_exec(L, opt->path, err, errlen);
    lua_close(L); /* the sims go (and with them their modules' last files) before the output */
    floe_output_destroy(out);
    return rc;
}
