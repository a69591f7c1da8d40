/* Checkpoint files: writing, checking, restoring (checkpoint.h). Numbers
 * are written in the machine's byte order; the header's byte-order mark
 * and Floe's version refuse a file of another machine or build. */
#include "checkpoint.h"
#include "device.h"

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "FLOECKPT"
#define CKPT_FORMAT 1u
#define CKPT_BOM 0x01020304u
#define CKPT_MAX (1ull << 40) /* larger than any checkpoint this format can describe */

enum { VERSION_LEN = 32, HASH_LEN = 24 };

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

/* This process's checkpoint file in the run folder: CKPT_FILE, or under
 * MPI rank R's own, checkpoint.rR.floe (R > 0), beside rank 0's. */
static const char *ckpt_name(void)
{
    static char buf[48];
    int rank = 0;
    const int ranks = floe_mpi_size(&rank);
    if (ranks < 2 || rank == 0)
        return CKPT_FILE;
    snprintf(buf, sizeof buf, "checkpoint.r%d.floe", rank);
    return buf;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct wr {
    FILE *f;
    uint64_t h;
    int bad;
} wr;

static void put(wr *w, const void *p, size_t n)
{
    if (w->bad || n == 0)
        return;
    w->h = fnv(w->h, p, n);
    if (fwrite(p, 1, n, w->f) != n)
        w->bad = 1;
}
static void put_u32(wr *w, uint32_t v) { put(w, &v, sizeof v); }
static void put_i32(wr *w, int32_t v) { put(w, &v, sizeof v); }
static void put_u64(wr *w, uint64_t v) { put(w, &v, sizeof v); }
static void put_f64(wr *w, double v) { put(w, &v, sizeof v); }
static void put_str(wr *w, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    put_u32(w, n);
    put(w, s, n);
}
static void put_fixed(wr *w, const char *s, size_t len)
{
    char buf[64] = {0};
    snprintf(buf, len < sizeof buf ? len : sizeof buf, "%s", s ? s : "");
    put(w, buf, len);
}

/* A module's blob grows in memory (its length goes first). */
typedef struct blob {
    floe_ctx *ctx;
    unsigned char *p;
    size_t len, cap;
    const char *module;
} blob;

static int blob_write(floe_state_io *io, const void *data, size_t bytes)
{
    blob *b = io->impl;
    if (b->len + bytes > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->len + bytes)
            nc *= 2;
        unsigned char *np = realloc(b->p, nc);
        if (!np)
            return ctx_fail(b->ctx, FLOE_ERR_NOMEM, "checkpoint: out of memory for the state of module '%s'",
                            b->module), -1;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, data, bytes);
    b->len += bytes;
    return 0;
}

static int has_hooks(const floe_module_desc *d)
{
    return d && d->size >= offsetof(floe_module_desc, load) + sizeof d->load && d->save && d->load;
}

static void put_frame(wr *w, const rec_frame *fr, int nstages)
{
    const floe_frame_stats *s = &fr->st;
    put_i32(w, s->frame);
    put_f64(w, s->time);
    put_u64(w, s->steps);
    put_f64(w, s->dt_min);
    put_f64(w, s->dt_max);
    put_u32(w, s->particles);
    put_f64(w, s->max_speed);
    put_f64(w, s->density_err_avg);
    put_f64(w, s->density_err_max);
    put_f64(w, s->kinetic);
    put_f64(w, s->potential);
    put_f64(w, s->wall_s);
    put(w, fr->stage_ms, (size_t)nstages * sizeof(double));
    put_i32(w, fr->nstats);
    for (int k = 0; k < fr->nstats; k++) {
        put_str(w, fr->stats[k].name ? fr->stats[k].name : "");
        put_f64(w, fr->stats[k].mean);
        put_f64(w, fr->stats[k].max);
    }
}

static int save_modules(floe_ctx *ctx, wr *w)
{
    uint32_t n = 0;
    for (int m = 0; m < ctx->nmodules; m++)
        n += has_hooks(ctx->modules[m].desc);
    put_u32(w, n);
    for (int m = 0; m < ctx->nmodules; m++) {
        module_inst *mi = &ctx->modules[m];
        if (!has_hooks(mi->desc))
            continue;
        blob b = {ctx, NULL, 0, 0, mi->desc->name};
        floe_state_io io = {sizeof io, &b, blob_write, NULL};
        int rc = mi->desc->save(mi->state, &io);
        if (rc != FLOE_OK) {
            free(b.p);
            if (!ctx->error[0])
                ctx_fail(ctx, rc, "checkpoint: module '%s' could not save its state", mi->desc->name);
            return rc;
        }
        put_str(w, mi->desc->name);
        put_u64(w, b.len);
        put(w, b.p, b.len);
        free(b.p);
    }
    return FLOE_OK;
}

static void save_sets(floe_ctx *ctx, wr *w)
{
    uint32_t n = 0;
    for (int s = 0; s < ctx->npsets; s++)
        n += ctx->sets[s].gen != 0;
    put_u32(w, n);
    for (int s = 0; s < ctx->npsets; s++) {
        pset *p = &ctx->sets[s];
        if (!p->gen)
            continue;
        dev_host_set(ctx, p, 0); /* a device: every attribute on the host */
        put_str(w, p->name);
        put_i32(w, (int32_t)p->kind);
        put(w, &p->rest_density, sizeof p->rest_density);
        put_i32(w, p->is_static);
        put_u32(w, p->n);
        put_u32(w, p->next_id);
        put_u32(w, (uint32_t)p->nattrs);
        for (int a = 0; a < p->nattrs; a++) {
            const attr *at = &p->attrs[a];
            put_str(w, at->name);
            put_i32(w, (int32_t)at->type);
            put(w, at->data, (size_t)p->n * floe_type_size(at->type));
        }
    }
}

int ckpt_save(floe_ctx *ctx, int dirfd, const char *shown, const char *scene_hash, const ckpt_run *run)
{
    const char *file = ckpt_name();
    io_atomic a;
    if (io_atomic_openat(&a, dirfd, file) != 0)
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write the checkpoint %s/%s: %s", shown, file,
                        strerror(errno));
    wr w = {a.f, FNV_INIT, 0};
    put(&w, CKPT_MAGIC, 8);
    put_u32(&w, CKPT_FORMAT);
    put_u32(&w, CKPT_BOM);
    put_fixed(&w, FLOE_VERSION, VERSION_LEN);
    put_fixed(&w, scene_hash, HASH_LEN);
    /* the run */
    put_u32(&w, run->ordinal);
    put_i32(&w, run->frame);
    put_i32(&w, run->first);
    put_i32(&w, run->recno);
    put_f64(&w, run->t_start);
    put_f64(&w, run->dt_prev);
    put_u64(&w, run->steps_total);
    put_u64(&w, run->particle_steps);
    put_i32(&w, ctx->nstages);
    for (int f = 0; f < run->frame; f++)
        put_frame(&w, &run->frames[f], ctx->nstages < REC_MAX_STAGES ? ctx->nstages : REC_MAX_STAGES);
    /* the context's clock and counters */
    put_i32(&w, ctx->info.dim);
    put(&w, &ctx->info.spacing, sizeof ctx->info.spacing);
    put_f64(&w, ctx->info.time);
    put_u64(&w, ctx->info.step);
    put_f64(&w, ctx->dt_last);
    put_f64(&w, ctx->dt_limit);
    put_u64(&w, ctx->nb_updates);
    put_i32(&w, ctx->ksums_wanted);
    save_sets(ctx, &w);
    int rc = save_modules(ctx, &w);
    uint64_t h = w.h;
    put(&w, &h, sizeof h);
    if (rc != FLOE_OK) {
        io_atomic_abort(&a);
        return rc;
    }
    if (w.bad) {
        int e = errno ? errno : EIO;
        io_atomic_abort(&a);
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write the checkpoint %s/%s: %s", shown, file, strerror(e));
    }
    if (io_atomic_commit(&a) != 0)
        return ctx_fail(ctx, FLOE_ERR_IO, "cannot write the checkpoint %s/%s: %s", shown, file,
                        strerror(errno));
    return FLOE_OK;
}

/* ---- reading ------------------------------------------------------------ */

typedef struct rd {
    ckpt_file *f;
    size_t end;              /* reads stop here (the checksum, or a module blob's end) */
    int bad;
} rd;

static int get(rd *r, void *p, size_t n)
{
    if (r->bad || n > r->end - r->f->pos) {
        r->bad = 1;
        if (p && n)
            memset(p, 0, n);
        return -1;
    }
    if (n)
        memcpy(p, r->f->data + r->f->pos, n);
    r->f->pos += n;
    return 0;
}
static uint32_t get_u32(rd *r) { uint32_t v = 0; get(r, &v, sizeof v); return v; }
static int32_t get_i32(rd *r) { int32_t v = 0; get(r, &v, sizeof v); return v; }
static uint64_t get_u64(rd *r) { uint64_t v = 0; get(r, &v, sizeof v); return v; }
static double get_f64(rd *r) { double v = 0; get(r, &v, sizeof v); return v; }
/* a string of at most max - 1 bytes into buf */
static int get_str(rd *r, char *buf, size_t max)
{
    uint32_t n = get_u32(r);
    if (r->bad || n >= max) {
        r->bad = 1;
        buf[0] = '\0';
        return -1;
    }
    get(r, buf, n);
    buf[n] = '\0';
    return r->bad ? -1 : 0;
}

static int read_file(int dirfd, const char *file, ckpt_file *f)
{
    int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size > CKPT_MAX) {
        int e = errno && !S_ISREG(st.st_mode) ? EINVAL : (errno ? errno : EFBIG);
        close(fd);
        errno = e;
        return -1;
    }
    f->len = (size_t)st.st_size;
    f->data = malloc(f->len ? f->len : 1);
    size_t got = 0;
    while (f->data && got < f->len) {
        ssize_t k = read(fd, f->data + got, f->len - got);
        if (k <= 0) {
            if (k == 0)
                break; /* shrank meanwhile: the size check below refuses it */
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        got += (size_t)k;
    }
    close(fd);
    if (!f->data) {
        errno = ENOMEM;
        return -1;
    }
    f->len = got;
    return 0;
}

static int read_frames(rd *r, ckpt_run *run, ckpt_file *f)
{
    int32_t nstages = get_i32(r);
    if (r->bad || nstages < 0 || nstages > REC_MAX_STAGES || run->frame < 0 || run->frame > 10000000)
        return -1;
    run->frames = calloc((size_t)run->frame + 1, sizeof *run->frames);
    size_t names_cap = 4096, names_len = 0;
    f->names = malloc(names_cap);
    if (!run->frames || !f->names)
        return -1;
    /* names are offsets first (the pool may move), pointers at the end */
    for (int i = 0; i < run->frame && !r->bad; i++) {
        rec_frame *fr = &run->frames[i];
        floe_frame_stats *s = &fr->st;
        s->frame = get_i32(r);
        s->time = get_f64(r);
        s->steps = get_u64(r);
        s->dt_min = get_f64(r);
        s->dt_max = get_f64(r);
        s->particles = get_u32(r);
        s->max_speed = get_f64(r);
        s->density_err_avg = get_f64(r);
        s->density_err_max = get_f64(r);
        s->kinetic = get_f64(r);
        s->potential = get_f64(r);
        s->wall_s = get_f64(r);
        get(r, fr->stage_ms, (size_t)nstages * sizeof(double));
        fr->nstats = get_i32(r);
        if (fr->nstats < 0 || fr->nstats > REC_MAX_STATS)
            return -1;
        for (int k = 0; k < fr->nstats && !r->bad; k++) {
            char name[NAME_LEN];
            get_str(r, name, sizeof name);
            size_t need = strlen(name) + 1;
            if (names_len + need > names_cap) {
                char *np = realloc(f->names, names_cap *= 2);
                if (!np)
                    return -1;
                f->names = np;
            }
            memcpy(f->names + names_len, name, need);
            fr->stats[k].name = (const char *)(uintptr_t)names_len;
            names_len += need;
            fr->stats[k].mean = get_f64(r);
            fr->stats[k].max = get_f64(r);
        }
    }
    for (int i = 0; i < run->frame; i++)
        for (int k = 0; k < run->frames[i].nstats; k++)
            run->frames[i].stats[k].name = f->names + (uintptr_t)run->frames[i].stats[k].name;
    return r->bad ? -1 : 0;
}

int ckpt_read(floe_ctx *ctx, int dirfd, const char *shown, const char *scene_hash, ckpt_file *f)
{
    memset(f, 0, sizeof *f);
    char other[48];
    const char *file = ckpt_name();
    /* the checkpoint of as many ranks as run now: rank R's file on each,
     * and none of a rank beyond (a run of more ranks wrote it) */
    int rank = 0;
    const int ranks = floe_mpi_size(&rank);
    snprintf(other, sizeof other, "checkpoint.r%d.floe", ranks);
    struct stat ost;
    if (fstatat(dirfd, other, &ost, AT_SYMLINK_NOFOLLOW) == 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: %s holds the checkpoint of a run on more processes than this "
                        "one (%d; %s is there): resume with the rank count that wrote it", shown, ranks, other);
    if (read_file(dirfd, file, f) != 0) {
        if (errno == ENOENT)
            return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: %s holds no checkpoint (%s): was it written by a run "
                            "with sim:run{checkpoint_every = N}?", shown, file);
        return ctx_fail(ctx, FLOE_ERR_IO, "--resume: cannot read the checkpoint %s/%s: %s", shown, file,
                        strerror(errno));
    }
    const size_t head = 8 + 4 + 4 + VERSION_LEN + HASH_LEN;
    if (f->len < 8 || memcmp(f->data, CKPT_MAGIC, 8) != 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: %s/%s is not a Floe checkpoint", shown, file);
    uint64_t sum;
    if (f->len < head + sizeof sum)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is truncated (%zu bytes)", shown,
                        file, f->len);
    rd r = {f, f->len - sizeof sum, 0};
    f->pos = 8;
    uint32_t format = get_u32(&r), bom = get_u32(&r);
    char version[VERSION_LEN + 1] = {0}, hash[HASH_LEN + 1] = {0};
    get(&r, version, VERSION_LEN);
    get(&r, hash, HASH_LEN);
    version[VERSION_LEN - 1] = hash[HASH_LEN - 1] = '\0';
    if (format != CKPT_FORMAT || bom != CKPT_BOM)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s has format %u%s; this Floe reads format %u",
                        shown, file, format, bom != CKPT_BOM ? " of another byte order" : "", CKPT_FORMAT);
    if (strcmp(version, FLOE_VERSION) != 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s was written by Floe %s; this is Floe %s "
                        "(a checkpoint resumes only with the version that wrote it)", shown, file, version,
                        FLOE_VERSION);
    if (strcmp(hash, scene_hash ? scene_hash : "") != 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s was written for another scene (scene "
                        "hash %s; this scene's is %s): resume with the scene file that made it, unchanged",
                        shown, file, hash[0] ? hash : "none", scene_hash && scene_hash[0] ? scene_hash : "none");
    memcpy(&sum, f->data + f->len - sizeof sum, sizeof sum);
    if (fnv(FNV_INIT, f->data, f->len - sizeof sum) != sum)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is corrupted or truncated (its checksum "
                        "does not match its %zu bytes)", shown, file, f->len);
    ckpt_run *run = &f->run;
    run->ordinal = get_u32(&r);
    run->frame = get_i32(&r);
    run->first = get_i32(&r);
    run->recno = get_i32(&r);
    run->t_start = get_f64(&r);
    run->dt_prev = get_f64(&r);
    run->steps_total = get_u64(&r);
    run->particle_steps = get_u64(&r);
    if (r.bad || run->first < 0 || run->recno < 0 || read_frames(&r, run, f) != 0)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is malformed (its run section)", shown,
                        file);
    return FLOE_OK;
}

/* ---- restoring ---------------------------------------------------------- */

static int restore_set(floe_ctx *ctx, rd *r, const char *shown)
{
    char name[NAME_LEN], aname[NAME_LEN];
    get_str(r, name, sizeof name);
    int32_t kind = get_i32(r);
    float rest;
    get(r, &rest, sizeof rest);
    int32_t is_static = get_i32(r);
    uint32_t n = get_u32(r), next_id = get_u32(r), nattrs = get_u32(r);
    if (r->bad || nattrs > MAX_ATTRS)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is malformed (a particle set)", shown,
                        ckpt_name());
    floe_set h = floe_set_find(ctx, name);
    pset *p = ctx_set(ctx, h);
    /* a module's every_frame set it marked moving during the run (the
     * freeze module's ice on moving bodies): moving again */
    if (p && (int32_t)p->kind == kind && kind == FLOE_SET_BOUNDARY && p->every_frame && p->is_static && !is_static &&
        ctx_set_moving(ctx, h) != FLOE_OK)
        return FLOE_ERR;
    if (!p || (int32_t)p->kind != kind || p->is_static != is_static)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the scene's set-up made no %s particle set '%s' as the "
                        "checkpoint %s/%s has", kind == FLOE_SET_FLUID ? "fluid" : "boundary", name, shown, ckpt_name());
    if ((uint64_t)n * 12 > r->end - r->f->pos)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is malformed (set '%s' has %u particles "
                        "in fewer bytes)", shown, ckpt_name(), name, n);
    if (ctx_set_resize(ctx, h, n) != FLOE_OK) /* OpenCL: host copies become the truth */
        return FLOE_ERR_NOMEM;
    if ((int)nattrs != p->nattrs)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: set '%s' has %d attributes after the scene's set-up, %u in "
                        "the checkpoint %s/%s (another pipeline?)", name, p->nattrs, nattrs, shown, ckpt_name());
    for (uint32_t a = 0; a < nattrs; a++) {
        get_str(r, aname, sizeof aname);
        int32_t type = get_i32(r);
        attr *at = r->bad ? NULL : pset_attr(p, aname);
        if (r->bad)
            break;
        if (!at || (int32_t)at->type != type)
            return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: set '%s' has no attribute '%s' of the checkpoint's type "
                            "after the scene's set-up (another pipeline?)", name, aname);
        get(r, at->data, (size_t)n * floe_type_size(at->type));
    }
    p->rest_density = rest;
    p->next_id = next_id;
    return r->bad ? ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is malformed (set '%s')", shown,
                             ckpt_name(), name)
                  : FLOE_OK;
}

static int blob_read(floe_state_io *io, void *data, size_t bytes)
{
    rd *r = io->impl;
    return get(r, data, bytes);
}

static int restore_modules(floe_ctx *ctx, rd *r, const char *shown)
{
    uint32_t n = get_u32(r);
    uint32_t want = 0;
    for (int m = 0; m < ctx->nmodules; m++)
        want += has_hooks(ctx->modules[m].desc);
    if (!r->bad && n != want)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s holds the state of %u modules; the "
                        "scene's set-up loaded %u that keep state", shown, ckpt_name(), n, want);
    for (uint32_t k = 0; k < n && !r->bad; k++) {
        char name[NAME_LEN];
        get_str(r, name, sizeof name);
        uint64_t len = get_u64(r);
        if (r->bad || len > r->end - r->f->pos)
            break;
        module_inst *mi = NULL;
        for (int m = 0; m < ctx->nmodules && !mi; m++)
            if (has_hooks(ctx->modules[m].desc) && strcmp(ctx->modules[m].desc->name, name) == 0)
                mi = &ctx->modules[m];
        if (!mi)
            return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s holds the state of module '%s', "
                            "which the scene's set-up did not load", shown, ckpt_name(), name);
        rd sub = {r->f, r->f->pos + (size_t)len, 0};
        floe_state_io io = {sizeof io, &sub, NULL, blob_read};
        ctx->error[0] = '\0';
        int rc = mi->desc->load(mi->state, &io);
        if (rc == FLOE_OK && (sub.bad || r->f->pos != sub.end))
            rc = FLOE_ERR_ARG;
        if (rc != FLOE_OK)
            return ctx->error[0] ? rc
                                 : ctx_fail(ctx, rc, "--resume: module '%s' could not read its state from the "
                                            "checkpoint %s/%s (%llu bytes)", name, shown, ckpt_name(),
                                            (unsigned long long)len);
    }
    return r->bad ? ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is malformed (module states)",
                             shown, ckpt_name())
                  : FLOE_OK;
}

int ckpt_restore(floe_ctx *ctx, ckpt_file *f, const char *shown)
{
    rd r = {f, f->len - sizeof(uint64_t), 0};
    int32_t dim = get_i32(&r);
    float spacing;
    get(&r, &spacing, sizeof spacing);
    double time = get_f64(&r);
    uint64_t step = get_u64(&r);
    double dt_last = get_f64(&r), dt_limit = get_f64(&r);
    uint64_t nb_updates = get_u64(&r);
    int32_t ksums = get_i32(&r);
    uint32_t nsets = get_u32(&r);
    if (r.bad)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is malformed (the clock)", shown, ckpt_name());
    if (dim != ctx->info.dim || spacing != ctx->info.spacing)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s is of a %dD simulation with spacing %g; "
                        "the scene's set-up made %dD with %g", shown, ckpt_name(), dim, spacing, ctx->info.dim,
                        ctx->info.spacing);
    int live = 0;
    for (int s = 0; s < ctx->npsets; s++)
        live += ctx->sets[s].gen != 0;
    if ((int)nsets != live)
        return ctx_fail(ctx, FLOE_ERR_ARG, "--resume: the checkpoint %s/%s has %u particle sets; the scene's set-up "
                        "made %d", shown, ckpt_name(), nsets, live);
    int rc = FLOE_OK;
    for (uint32_t s = 0; s < nsets && !rc; s++)
        rc = restore_set(ctx, &r, shown);
    if (!rc)
        rc = restore_modules(ctx, &r, shown);
    /* the static sets sorted (and kept) as the checkpointed run had them
     * since its first neighbour update: their order is the checkpoint's
     * (sorted already), so that sort moves nothing; without it the first
     * step would sort them, mark the volumes dirty and recompute them with
     * one more neighbour update than the run never interrupted made, and
     * the fluid would be reordered at other steps (reorder_every) */
    if (!rc)
        rc = ctx_neighbours_update(ctx, 0);
    if (rc)
        return rc;
    ctx->info.time = time;
    ctx->info.step = step;
    ctx->dt_last = dt_last;
    ctx->dt_limit = dt_limit;
    ctx->nb_updates = nb_updates;
    ctx->ksums_wanted = ksums;
    ctx->boundary_dirty = 0; /* the volumes are the checkpoint's */
    return FLOE_OK;
}

void ckpt_free(ckpt_file *f)
{
    free(f->data);
    free(f->names);
    free(f->run.frames);
    memset(f, 0, sizeof *f);
}
