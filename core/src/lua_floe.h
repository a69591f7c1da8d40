/* The Lua binding's shared functions (internal): what lua_scene.c,
 * lua_sim.c, lua_sandbox.c and yaml_lua.c call of each other. */
#ifndef FLOE_LUA_FLOE_H
#define FLOE_LUA_FLOE_H

#include <floe/floe.h>

#include <lua.h>
#include <stddef.h>

/* ---- lua_sim.c (lua_sim.h): the `floe` module and its per-state scene record */

int luaopen_floe(lua_State *L);
/* Record opt (kept by pointer: it must outlive the state), the scene's
 * folder and hash in L's registry for floe.param, floe.sim and sim:run. */
void floe_lua_scene_init(lua_State *L, const floe_scene_opts *opt, const char *dir, const char *hash);
/* The floe status of the last failed sim:run (FLOE_OK if none). */
int floe_lua_scene_status(lua_State *L);
/* Nonzero, with the message in err, when a --set entry was used by nothing. */
int floe_lua_scene_unused(lua_State *L, char *err, size_t errlen);

/* ---- lua_sandbox.c ------------------------------------------------------ */

/* Restrict L: no programs, C loaders, binary chunks or debug library;
 * file writes only under the output root (resolved by out_path.c). */
void floe_lua_sandbox_apply(lua_State *L, floe_output *out);
/* Raise the sandbox error unless path may be written (what names the call). */
void floe_lua_sandbox_check_write(lua_State *L, const char *path, const char *what);

/* ---- run.c: stop requests (signals) and the wall-time limit ----------- */

/* FLOE_ERR_INTERRUPT or FLOE_ERR_TIMEOUT when the scene must stop, else FLOE_OK. */
int floe_stop_pending(void);
/* A scene begins: requests made so far are handled; limit 0 = none. */
void floe_stop_reset(double timeout_s);

/* ---- yaml_lua.c: YAML presets ------------------------------------------- */

/* Parse the YAML file at path and push it as a Lua value: mappings become
 * tables with string keys, sequences arrays (1-based), plain scalars that
 * read as numbers become numbers, true/false/yes/no booleans, null/~ nil,
 * everything else strings. On error pushes nothing, writes
 * "path:line:col: message" into err and returns -1. */
int yaml_push_file(lua_State *L, const char *path, char *err, size_t errlen);

#endif
