/* Module loader: finds floe_<name>.so on the search path, checks the
 * entry point, the ABI version and the descriptor, then runs init.
 * Every error names the module, the file and what was wrong. */
#include "ctx.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef FLOE_BUILD_MODULE_DIR
#define FLOE_BUILD_MODULE_DIR "build/modules"
#endif
#ifndef FLOE_INSTALL_MODULE_DIR
#define FLOE_INSTALL_MODULE_DIR "/usr/local/lib/floe"
#endif

void floe_module_search_path(char *buf, size_t len)
{
    const char *env = getenv("FLOE_MODULE_PATH");
    snprintf(buf, len, "%s%s%s:%s", FLOE_BUILD_MODULE_DIR, env && env[0] ? ":" : "", env && env[0] ? env : "",
             FLOE_INSTALL_MODULE_DIR);
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int valid_name(const char *s)
{
    if (!s || !s[0] || strlen(s) >= NAME_LEN)
        return 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return 0;
    return 1;
}

/* Look for the module file along the search path; on failure lists the
 * places it looked in `looked`. */
static int find_module(const char *name, char *path, size_t len, char *looked, size_t llen)
{
    char sp[4096];
    floe_module_search_path(sp, sizeof sp);
    looked[0] = 0;
    for (char *save = NULL, *dir = strtok_r(sp, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        for (int f = 0; f < 2; f++) {
            if (f == 0)
                snprintf(path, len, "%s/floe_%s.so", dir, name);
            else
                snprintf(path, len, "%s/%s/floe_%s.so", dir, name, name);
            if (file_exists(path))
                return 1;
            size_t used = strlen(looked);
            snprintf(looked + used, llen - used, "\n    %s", path);
        }
    }
    return 0;
}

#define HAS(desc, field) ((desc)->size >= offsetof(__typeof__(*(desc)), field) + sizeof((desc)->field))

static int check_param(floe_ctx *ctx, const char *where, const floe_param_desc *p)
{
    if (p->size < offsetof(floe_param_desc, doc) + sizeof p->doc)
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: parameter descriptor has size %u (too small; missing FLOE_SIZED?)",
                        where, p->size);
    if (!valid_name(p->name))
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: parameter name '%s' is not an identifier", where, p->name);
    if (p->type < FLOE_PARAM_FLOAT || p->type > FLOE_PARAM_VEC3)
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: parameter '%s' has unknown type %d", where, p->name, (int)p->type);
    if ((p->type == FLOE_PARAM_FLOAT || p->type == FLOE_PARAM_INT) && p->min < p->max &&
        (p->def < p->min || p->def > p->max))
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: parameter '%s' default %g is outside its range [%g, %g]", where,
                        p->name, p->def, p->min, p->max);
    return FLOE_OK;
}

static int check_stage(floe_ctx *ctx, const char *mod, const floe_stage_desc *s)
{
    char where[256];
    if (s->size < offsetof(floe_stage_desc, attrs) + sizeof s->attrs)
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s': stage descriptor '%s' has size %u (too small)", mod,
                        s->name ? s->name : "?", s->size);
    if (!valid_name(s->name))
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s': stage name '%s' is not an identifier", mod,
                        s->name ? s->name : "(null)");
    snprintf(where, sizeof where, "module '%s', stage '%s'", mod, s->name);
    const char *cond, *by = ctx_stage_replaced_by(s, &cond);
    if (by && (!strchr(by, '.') || (cond && !strchr(cond, '='))))
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: replaced_by '%s' / replaced_if '%s': expected MODULE.STAGE and NAME=VALUE",
                        where, by, cond ? cond : "");
    if (!s->run && !(by && !cond))
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: no run function (the C path is required)", where);
    int np = 0;
    for (const floe_param_desc *p = s->params; p && p->name; p++, np++) {
        int rc = check_param(ctx, where, p);
        if (rc)
            return rc;
        for (const floe_param_desc *q = s->params; q != p; q++)
            if (strcmp(q->name, p->name) == 0)
                return ctx_fail(ctx, FLOE_ERR_ARG, "%s: parameter '%s' declared twice", where, p->name);
    }
    if (np > MAX_PARAMS)
        return ctx_fail(ctx, FLOE_ERR_ARG, "%s: more than %d parameters", where, MAX_PARAMS);
    for (const floe_attr_desc *a = s->attrs; a && a->name; a++) {
        if (a->size < sizeof(floe_attr_desc) || !valid_name(a->name) || a->type < FLOE_F32 || a->type > FLOE_U32 ||
            !(a->kind & FLOE_SET_ANY) || !(a->access & (FLOE_READ | FLOE_WRITE)) ||
            (a->access & ~(unsigned)(FLOE_READ | FLOE_WRITE | FLOE_OVERWRITE | FLOE_OWN)) ||
            ((a->access & FLOE_OWN) && !(a->access & FLOE_READ)))
            return ctx_fail(ctx, FLOE_ERR_ARG, "%s: malformed attribute descriptor '%s'", where, a->name);
        if ((a->access & FLOE_OVERWRITE) && (a->access & (FLOE_READ | FLOE_WRITE)) != FLOE_WRITE)
            return ctx_fail(ctx, FLOE_ERR_ARG,
                            "%s: attribute '%s' is FLOE_OVERWRITE, which needs FLOE_WRITE and excludes FLOE_READ", where,
                            a->name);
    }
    return FLOE_OK;
}

/* Check a descriptor; `path` names the file in messages. */
static int check_module(floe_ctx *ctx, const char *want, const char *path, const floe_module_desc *d)
{
    if (!d)
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s' (%s): entry point returned no descriptor", want, path);
    if (d->size < offsetof(floe_module_desc, abi_minor) + sizeof d->abi_minor)
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s' (%s): malformed descriptor (size %u)", want, path, d->size);
    if (d->abi_major != FLOE_ABI_MAJOR || d->abi_minor > FLOE_ABI_MINOR)
        return ctx_fail(ctx, FLOE_ERR_ARG,
                        "module '%s' (%s) was built for Floe module ABI %u.%u, but this Floe speaks ABI %d.%d "
                        "(a module needs the same major and a minor no newer than the core's); rebuild the module",
                        want, path, d->abi_major, d->abi_minor, FLOE_ABI_MAJOR, FLOE_ABI_MINOR);
    if (d->size < offsetof(floe_module_desc, fini) + sizeof d->fini)
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s' (%s): malformed descriptor (size %u, expected at least %zu)",
                        want, path, d->size, offsetof(floe_module_desc, fini) + sizeof d->fini);
    if (!d->name || strcmp(d->name, want) != 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s' (%s): malformed descriptor: it calls itself '%s'", want, path,
                        d->name ? d->name : "(null)");
    if (!d->version || !d->version[0])
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s' (%s): malformed descriptor: no version", want, path);
    if (!d->stages || !d->stages[0].name)
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s' (%s): malformed descriptor: no stages", want, path);
    for (const floe_stage_desc *s = d->stages; s->name; s++) {
        int rc = check_stage(ctx, want, s);
        if (rc)
            return rc;
        for (const floe_stage_desc *t = d->stages; t != s; t++)
            if (strcmp(t->name, s->name) == 0)
                return ctx_fail(ctx, FLOE_ERR_ARG, "duplicate stage '%s.%s': declared twice by module '%s' (%s)",
                                want, s->name, want, path);
    }
    return FLOE_OK;
}

/* Open a module file and return its validated descriptor. */
static int open_module(floe_ctx *ctx, const char *name, const char *path, void **dl_out,
                       const floe_module_desc **out)
{
    dlerror();
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return ctx_fail(ctx, FLOE_ERR_ARG, "module '%s': cannot load %s: %s", name, path, dlerror());
    char sym[128];
    snprintf(sym, sizeof sym, "floe_module_%s", name);
    dlerror();
    floe_module_entry_fn entry;
    *(void **)&entry = dlsym(dl, sym);
    if (!entry) {
        const char *e = dlerror();
        ctx_fail(ctx, FLOE_ERR_ARG, "module '%s' (%s): missing entry point %s (%s)", name, path, sym,
                 e ? e : "symbol is NULL");
        dlclose(dl);
        return FLOE_ERR_ARG;
    }
    const floe_module_desc *d = entry(floe_core_api());
    int rc = check_module(ctx, name, path, d);
    if (rc) {
        dlclose(dl);
        return rc;
    }
    *dl_out = dl;
    *out = d;
    return FLOE_OK;
}

void floe_module_unload_handle(void *dl)
{
    if (dl && !getenv("FLOE_KEEP_MODULES")) /* keep mapped for leak checkers' stacks */
        dlclose(dl);
}

static module_inst *find_loaded(floe_ctx *ctx, const char *name)
{
    for (int i = 0; i < ctx->nmodules; i++)
        if (strcmp(ctx->modules[i].desc->name, name) == 0)
            return &ctx->modules[i];
    return NULL;
}

typedef struct name_list {
    char names[256][NAME_LEN];
    const char *ptr[256];
    int n;
} name_list;

static void collect_name(const floe_module_listing *m, void *u)
{
    name_list *l = u;
    if (l->n < 256) {
        snprintf(l->names[l->n], NAME_LEN, "%s", m->name);
        l->ptr[l->n] = l->names[l->n];
        l->n++;
    }
}

/* " (did you mean 'wcsph'?)" for a module not found, or "". */
static void suggest_module(const char *name, char *out, size_t len)
{
    static name_list l;
    l.n = 0;
    out[0] = 0;
    floe_module_scan(collect_name, NULL, &l);
    const char *near = floe_nearest_name(name, l.ptr, l.n);
    if (near)
        snprintf(out, len, " (did you mean '%s'?)", near);
}

int floe_module_load(floe_ctx *ctx, const char *name)
{
    if (!valid_name(name))
        return ctx_fail(ctx, FLOE_ERR_ARG, "module name '%s' is not an identifier", name ? name : "(null)");
    if (find_loaded(ctx, name))
        return FLOE_OK;
    if (ctx->nmodules == MAX_MODULES)
        return ctx_fail(ctx, FLOE_ERR_ARG, "more than %d modules", MAX_MODULES);
    char path[1024], looked[8192];
    if (!find_module(name, path, sizeof path, looked, sizeof looked)) {
        char near[NAME_LEN + 32];
        suggest_module(name, near, sizeof near);
        return ctx_fail(ctx, FLOE_ERR_ARG,
                        "module '%s' not found%s; looked for:%s\n(set FLOE_MODULE_PATH to add folders)", name, near,
                        looked);
    }
    void *dl;
    const floe_module_desc *d;
    int rc = open_module(ctx, name, path, &dl, &d);
    if (rc)
        return rc;
    module_inst *m = &ctx->modules[ctx->nmodules];
    memset(m, 0, sizeof *m);
    m->desc = d;
    m->dl = dl;
    snprintf(m->path, sizeof m->path, "%s", path);
    if (d->init && (rc = d->init(ctx, &m->state)) != FLOE_OK) {
        char msg[sizeof ctx->error];
        snprintf(msg, sizeof msg, "%s", ctx->error);
        ctx_fail(ctx, rc ? rc : FLOE_ERR, "module '%s' (%s): init failed: %s", name, path, msg[0] ? msg : "no message");
        dlclose(dl);
        return rc;
    }
    ctx->nmodules++;
    return FLOE_OK;
}

int ctx_module_lua_open(floe_ctx *ctx, const char *name, void *L)
{
    module_inst *m = find_loaded(ctx, name);
    if (!m || !HAS(m->desc, lua_open) || !m->desc->lua_open)
        return 0;
    return m->desc->lua_open(m->state, ctx, L);
}

/* ---- listing ---------------------------------------------------------- */

static int seen(char names[][NAME_LEN], int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static void scan_file(floe_ctx *ctx, const char *path, const char *file, char names[][NAME_LEN], int *nnames,
                      void (*fn)(const floe_module_listing *, void *),
                      void (*err_fn)(const char *, const char *, void *), void *u)
{
    size_t len = strlen(file);
    if (strncmp(file, "floe_", 5) != 0 || len < 9 || strcmp(file + len - 3, ".so") != 0 || len - 8 >= NAME_LEN)
        return;
    char name[NAME_LEN];
    snprintf(name, sizeof name, "%.*s", (int)(len - 8), file + 5);
    if (seen(names, *nnames, name) || *nnames >= 256)
        return;
    void *dl;
    const floe_module_desc *d;
    if (open_module(ctx, name, path, &dl, &d)) {
        if (err_fn)
            err_fn(path, ctx->error, u);
        return;
    }
    snprintf(names[(*nnames)++], NAME_LEN, "%s", name);
    floe_module_listing l = {d->name, d->version, d->summary, path, d};
    fn(&l, u);
    floe_module_unload_handle(dl);
}

int floe_module_scan(void (*fn)(const floe_module_listing *m, void *u),
                     void (*err_fn)(const char *path, const char *msg, void *u), void *u)
{
    floe_ctx *ctx = calloc(1, sizeof *ctx);
    char (*names)[NAME_LEN] = calloc(256, NAME_LEN); /* modules listed so far */
    if (!ctx || !names) {
        free(ctx);
        free(names);
        return FLOE_ERR_NOMEM;
    }
    int nnames = 1;
    snprintf(names[0], NAME_LEN, "core");
    floe_module_listing core = {"core", FLOE_VERSION, floe_core_module()->summary, "(built in)", floe_core_module()};
    fn(&core, u);
    char sp[4096], path[2048];
    floe_module_search_path(sp, sizeof sp);
    for (char *save = NULL, *dir = strtok_r(sp, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        DIR *dd = opendir(dir);
        if (!dd)
            continue;
        /* collect entries and sort them so the listing is stable */
        char ents[512][256];
        int ne = 0;
        for (struct dirent *e; (e = readdir(dd)) && ne < 512;)
            if (e->d_name[0] != '.')
                snprintf(ents[ne++], 256, "%s", e->d_name);
        closedir(dd);
        qsort(ents, (size_t)ne, 256, (int (*)(const void *, const void *))strcmp);
        for (int i = 0; i < ne; i++) {
            snprintf(path, sizeof path, "%.1500s/%.255s", dir, ents[i]);
            struct stat st;
            if (stat(path, &st) != 0)
                continue;
            if (S_ISREG(st.st_mode)) {
                scan_file(ctx, path, ents[i], names, &nnames, fn, err_fn, u);
            } else if (S_ISDIR(st.st_mode)) {
                char file[300];
                snprintf(file, sizeof file, "floe_%.255s.so", ents[i]);
                snprintf(path, sizeof path, "%.1000s/%.255s/%.290s", dir, ents[i], file);
                if (file_exists(path))
                    scan_file(ctx, path, file, names, &nnames, fn, err_fn, u);
            }
        }
    }
    free(names);
    free(ctx);
    return FLOE_OK;
}
