/* YAML presets into Lua tables (internal). */
#ifndef FLOE_YAML_LUA_H
#define FLOE_YAML_LUA_H

#include <lua.h>

/* Parse the YAML file at path and push it as a Lua value: mappings become
 * tables with string keys, sequences arrays (1-based), plain scalars that
 * read as numbers become numbers, true/false/yes/no booleans, null/~ nil,
 * everything else strings. On error pushes nothing, writes
 * "path:line:col: message" into err and returns -1. */
int yaml_push_file(lua_State *L, const char *path, char *err, size_t errlen);

#endif
