/* YAML presets into Lua values, with libyaml's event parser.
 *
 * Mappings become tables with string keys (a duplicate key is an error),
 * sequences 1-based arrays, plain scalars that read whole as numbers become
 * integers or floats, true/false/yes/no booleans, null/~/empty nil (a
 * mapping key with a nil value is left out); quoted scalars are strings.
 * Aliases are refused. The Lua work runs under lua_pcall, so a memory error
 * cannot unbalance the stack or leak the parser. */
#include "lua_floe.h"

#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YL_MAX_DEPTH 64

typedef struct yl_ctx {
    const char *path;
    FILE *file;
    yaml_parser_t parser;
    yaml_event_t event;
    int have_event;
    char *err;
    size_t errlen;
    int err_set;
} yl_ctx;

/* Format the error into ctx->err and raise (inside the pcall). */
static int yl_fail(lua_State *L, yl_ctx *c, yaml_mark_t mark, const char *msg)
{
    snprintf(c->err, c->errlen, "%s:%lu:%lu: %s", c->path, (unsigned long)mark.line + 1,
             (unsigned long)mark.column + 1, msg);
    c->err_set = 1;
    lua_pushstring(L, c->err);
    return lua_error(L);
}

static void yl_parser_fail(lua_State *L, yl_ctx *c)
{
    const yaml_parser_t *p = &c->parser;
    char msg[512];
    const char *problem = p->problem ? p->problem : "malformed YAML";
    yaml_mark_t mark = p->problem_mark;
    if (p->error == YAML_MEMORY_ERROR) {
        problem = "out of memory";
    } else if (p->error == YAML_READER_ERROR) {
        /* reader errors (bad UTF-8, control characters) carry a byte offset,
         * not a line: count lines up to it */
        size_t off = p->problem_offset;
        mark.line = 0;
        mark.column = 0;
        if (c->file && fseek(c->file, 0, SEEK_SET) == 0) {
            for (size_t i = 0; i < off; i++) {
                int ch = getc(c->file);
                if (ch == EOF)
                    break;
                if (ch == '\n') {
                    mark.line++;
                    mark.column = 0;
                } else {
                    mark.column++;
                }
            }
        }
        snprintf(msg, sizeof msg, "%.200s (at byte %lu)", problem, (unsigned long)off);
        problem = msg;
    }
    if (p->error != YAML_READER_ERROR && p->context) {
        snprintf(msg, sizeof msg, "%.200s (%.200s started at line %lu)", problem, p->context,
                 (unsigned long)p->context_mark.line + 1);
        problem = msg;
    }
    yl_fail(L, c, mark, problem);
}

/* Next event into c->event (the previous one is released). */
static void yl_next(lua_State *L, yl_ctx *c)
{
    if (c->have_event) {
        yaml_event_delete(&c->event);
        c->have_event = 0;
    }
    if (!yaml_parser_parse(&c->parser, &c->event))
        yl_parser_fail(L, c);
    c->have_event = 1;
}

static int is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return 1;
    return 0;
}

/* Push a plain scalar with its resolved type. Returns 0 if it is null
 * (nothing pushed), 1 if a value was pushed. */
static int push_plain(lua_State *L, const char *s, size_t len)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO", NULL};
    static const char *const infs[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
    static const char *const ninfs[] = {"-.inf", "-.Inf", "-.INF", NULL};
    static const char *const nans[] = {".nan", ".NaN", ".NAN", NULL};

    if (strlen(s) != len) { /* embedded NUL: a string */
        lua_pushlstring(L, s, len);
        return 1;
    }
    if (is_one_of(s, nulls))
        return 0;
    if (is_one_of(s, trues)) {
        lua_pushboolean(L, 1);
        return 1;
    }
    if (is_one_of(s, falses)) {
        lua_pushboolean(L, 0);
        return 1;
    }
    if (is_one_of(s, infs)) {
        lua_pushnumber(L, (lua_Number)HUGE_VAL);
        return 1;
    }
    if (is_one_of(s, ninfs)) {
        lua_pushnumber(L, (lua_Number)-HUGE_VAL);
        return 1;
    }
    if (is_one_of(s, nans)) {
        lua_pushnumber(L, (lua_Number)NAN);
        return 1;
    }
    /* Numbers: only digits, sign, '.', exponent (strtod alone would also take
     * "nan", "inf" and hex floats). */
    int digits = 0, numeric = 1;
    for (const char *p = s; *p && numeric; p++) {
        if (*p >= '0' && *p <= '9')
            digits = 1;
        else if (!strchr("+-.eE", *p))
            numeric = 0;
    }
    if (numeric && digits) {
        char *end;
        errno = 0;
        long long i = strtoll(s, &end, 10);
        if (*end == '\0' && errno == 0) {
            lua_pushinteger(L, (lua_Integer)i);
            return 1;
        }
        errno = 0;
        double d = strtod(s, &end);
        if (*end == '\0' && end != s) {
            lua_pushnumber(L, (lua_Number)d);
            return 1;
        }
    }
    lua_pushlstring(L, s, len);
    return 1;
}

/* Push the scalar of the current event; returns 0 for null (nothing
 * pushed). */
static int push_scalar(lua_State *L, yl_ctx *c)
{
    const yaml_event_t *e = &c->event;
    const char *v = (const char *)e->data.scalar.value;
    size_t len = e->data.scalar.length;
    const char *tag = (const char *)e->data.scalar.tag;
    if (tag && strcmp(tag, YAML_STR_TAG) == 0) {
        lua_pushlstring(L, v, len);
        return 1;
    }
    if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        lua_pushlstring(L, v, len);
        return 1;
    }
    return push_plain(L, v, len);
}

static int push_node(lua_State *L, yl_ctx *c, int depth);

/* Current event is MAPPING-START. Pushes the table. */
static void push_mapping(lua_State *L, yl_ctx *c, int depth)
{
    luaL_checkstack(L, 6, "YAML nesting");
    lua_newtable(L); /* result */
    lua_newtable(L); /* keys seen (also those with null values) */
    for (;;) {
        yl_next(L, c);
        if (c->event.type == YAML_MAPPING_END_EVENT)
            break;
        if (c->event.type == YAML_ALIAS_EVENT)
            yl_fail(L, c, c->event.start_mark, "aliases (*name) are not supported");
        if (c->event.type != YAML_SCALAR_EVENT)
            yl_fail(L, c, c->event.start_mark, "mapping keys must be scalars");
        yaml_mark_t kmark = c->event.start_mark;
        lua_pushlstring(L, (const char *)c->event.data.scalar.value, c->event.data.scalar.length);
        lua_pushvalue(L, -1);
        if (lua_rawget(L, -3) != LUA_TNIL) {
            char msg[300];
            snprintf(msg, sizeof msg, "duplicate key '%.200s'", lua_tostring(L, -2));
            yl_fail(L, c, kmark, msg);
        }
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushboolean(L, 1);
        lua_rawset(L, -4); /* seen[key] = true; stack: result seen key */
        yl_next(L, c);
        if (push_node(L, c, depth + 1))
            lua_rawset(L, -4); /* result[key] = value */
        else
            lua_pop(L, 1); /* null: leave the key out */
    }
    lua_pop(L, 1); /* seen */
}

/* Current event is SEQUENCE-START. Pushes the array. Null items leave a
 * hole so later items keep their positions. */
static void push_sequence(lua_State *L, yl_ctx *c, int depth)
{
    luaL_checkstack(L, 4, "YAML nesting");
    lua_newtable(L);
    lua_Integer i = 0;
    for (;;) {
        yl_next(L, c);
        if (c->event.type == YAML_SEQUENCE_END_EVENT)
            break;
        i++;
        if (push_node(L, c, depth + 1))
            lua_rawseti(L, -2, i);
    }
}

/* Push the node starting at the current event; 0 if it is null (nothing
 * pushed), 1 if a value was pushed. */
static int push_node(lua_State *L, yl_ctx *c, int depth)
{
    if (depth > YL_MAX_DEPTH &&
        (c->event.type == YAML_SEQUENCE_START_EVENT || c->event.type == YAML_MAPPING_START_EVENT)) {
        char msg[64];
        snprintf(msg, sizeof msg, "nesting deeper than %d levels", YL_MAX_DEPTH);
        yl_fail(L, c, c->event.start_mark, msg);
    }
    switch (c->event.type) {
    case YAML_SCALAR_EVENT:
        return push_scalar(L, c);
    case YAML_SEQUENCE_START_EVENT:
        push_sequence(L, c, depth);
        return 1;
    case YAML_MAPPING_START_EVENT:
        push_mapping(L, c, depth);
        return 1;
    case YAML_ALIAS_EVENT:
        yl_fail(L, c, c->event.start_mark, "aliases (*name) are not supported");
        return 0;
    default:
        yl_fail(L, c, c->event.start_mark, "unexpected YAML event");
        return 0;
    }
}

/* lua_pcall body: upvalue-free, ctx as light userdata argument. Returns the
 * document's value (nil for an empty file). */
static int yl_parse(lua_State *L)
{
    yl_ctx *c = lua_touserdata(L, 1);
    lua_settop(L, 0);
    yl_next(L, c);
    if (c->event.type != YAML_STREAM_START_EVENT)
        yl_fail(L, c, c->event.start_mark, "unexpected YAML event");
    yl_next(L, c);
    if (c->event.type == YAML_STREAM_END_EVENT) { /* empty file */
        lua_pushnil(L);
        return 1;
    }
    if (c->event.type != YAML_DOCUMENT_START_EVENT)
        yl_fail(L, c, c->event.start_mark, "unexpected YAML event");
    yl_next(L, c);
    if (!push_node(L, c, 1))
        lua_pushnil(L);
    yl_next(L, c);
    if (c->event.type != YAML_DOCUMENT_END_EVENT)
        yl_fail(L, c, c->event.start_mark, "unexpected YAML event");
    yl_next(L, c);
    if (c->event.type != YAML_STREAM_END_EVENT)
        yl_fail(L, c, c->event.start_mark, "more than one YAML document");
    return 1;
}

int yaml_push_file(lua_State *L, const char *path, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!L || !path) {
        snprintf(err, errlen, "%s: invalid argument", path ? path : "(null)");
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (!lua_checkstack(L, 4)) {
        fclose(f);
        snprintf(err, errlen, "%s: Lua stack overflow", path);
        return -1;
    }
    yl_ctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.file = f;
    c.err = err;
    c.errlen = errlen;
    if (!yaml_parser_initialize(&c.parser)) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    yaml_parser_set_input_file(&c.parser, f);

    int top = lua_gettop(L);
    lua_pushcfunction(L, yl_parse);
    lua_pushlightuserdata(L, &c);
    int rc = lua_pcall(L, 1, 1, 0);
    if (c.have_event)
        yaml_event_delete(&c.event);
    yaml_parser_delete(&c.parser);
    fclose(f);
    if (rc != LUA_OK) {
        if (!c.err_set) { /* a Lua error (memory, stack) */
            const char *m = lua_tostring(L, -1);
            snprintf(err, errlen, "%s: %s", path, m ? m : "error");
        }
        lua_settop(L, top);
        return -1;
    }
    return 0;
}
