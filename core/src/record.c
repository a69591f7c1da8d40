/* Run record: a YAML document written with libyaml's emitter. At the start
 * of a run everything but the frames is written through an io_atomic file,
 * ending in "frames:"; each frame then appends its line with one write(2),
 * so a run costs time linear in its frames and the file is valid YAML at
 * any kill point; at the end the whole record, with its final status, is
 * written through io_atomic again.
 *
 * Top level is a block mapping; small mappings (floe, scene, time_step, one
 * module, one pipeline stage, one frame) are flow mappings so every frame is
 * one line. Doubles are printed with "%.9g", NaN/Inf as .nan/.inf. */
#include "record.h"

#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

typedef struct emit {
    yaml_emitter_t em;
    int failed;
} emit;

static void ev(emit *e, yaml_event_t *event, int init_ok)
{
    if (e->failed) {
        if (init_ok)
            yaml_event_delete(event);
        return;
    }
    if (!init_ok) {
        e->failed = 1;
        return;
    }
    /* yaml_emitter_emit takes ownership of the event, also on failure */
    if (!yaml_emitter_emit(&e->em, event))
        e->failed = 1;
}

/* Would this text, written plain, be read back as something other than a
 * string (number, bool, null)? Then it must be quoted. */
static int reads_as_non_string(const char *s)
{
    static const char *const words[] = {"~", "null", "true", "false", "yes", "no", "on", "off", "y", "n",
                                        ".nan", ".inf", "-.inf", "+.inf"};
    if (!*s)
        return 1;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(s, words[i]) == 0)
            return 1;
    /* anything strtod takes whole (integers, decimals, exponents, hex) */
    char *end;
    (void)strtod(s, &end);
    if (end != s && *end == '\0')
        return 1;
    return 0;
}

static void scalar_raw(emit *e, const char *s, yaml_scalar_style_t style)
{
    yaml_event_t event;
    int ok = yaml_scalar_event_initialize(&event, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1, style);
    ev(e, &event, ok);
}

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0)
        n = 2, min = 0x80, c &= 0x1f;
    else if ((c & 0xf0) == 0xe0)
        n = 3, min = 0x800, c &= 0x0f;
    else if ((c & 0xf8) == 0xf0)
        n = 4, min = 0x10000, c &= 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3fu);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

/* A string value: plain or quoted as libyaml chooses, but always quoted when
 * the plain form would read as a number, bool or null. NULL is null. Bytes
 * that are not UTF-8 (libyaml refuses them) become '?'. */
static void str(emit *e, const char *s)
{
    if (!s) {
        scalar_raw(e, "null", YAML_PLAIN_SCALAR_STYLE);
        return;
    }
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, len = strlen(s);
    while (i < len) {
        size_t k = utf8_len(u + i);
        if (!k)
            break;
        i += k;
    }
    char *fixed = NULL;
    if (i < len) {
        fixed = malloc(len + 1);
        if (!fixed) {
            e->failed = 1;
            return;
        }
        for (i = 0; i < len;) {
            size_t k = utf8_len(u + i);
            if (!k) {
                fixed[i++] = '?';
            } else {
                memcpy(fixed + i, s + i, k);
                i += k;
            }
        }
        fixed[len] = '\0';
        s = fixed;
    }
    scalar_raw(e, s, reads_as_non_string(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
    free(fixed);
}

/* A key (always a string). */
static void key(emit *e, const char *s)
{
    str(e, s ? s : "");
}

static void num(emit *e, double v)
{
    char b[40];
    if (isnan(v))
        snprintf(b, sizeof b, ".nan");
    else if (isinf(v))
        snprintf(b, sizeof b, v > 0 ? ".inf" : "-.inf");
    else
        snprintf(b, sizeof b, "%.9g", v);
    scalar_raw(e, b, YAML_PLAIN_SCALAR_STYLE);
}

static void inum(emit *e, long long v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", v);
    scalar_raw(e, b, YAML_PLAIN_SCALAR_STYLE);
}

static void unum(emit *e, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    scalar_raw(e, b, YAML_PLAIN_SCALAR_STYLE);
}

/* A pre-printed parameter value: plain if it reads as a number, bool or
 * null (that is what it is), else a string. */
static void printed(emit *e, const char *s)
{
    if (!s || !*s)
        scalar_raw(e, "null", YAML_PLAIN_SCALAR_STYLE);
    else if (reads_as_non_string(s) && strchr(s, '\n') == NULL)
        scalar_raw(e, s, YAML_PLAIN_SCALAR_STYLE);
    else
        str(e, s);
}

static void map_begin(emit *e, int flow)
{
    yaml_event_t event;
    int ok = yaml_mapping_start_event_initialize(&event, NULL, NULL, 1,
                                                 flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
    ev(e, &event, ok);
}

static void map_end(emit *e)
{
    yaml_event_t event;
    ev(e, &event, yaml_mapping_end_event_initialize(&event));
}

static void seq_begin(emit *e, int flow)
{
    yaml_event_t event;
    int ok = yaml_sequence_start_event_initialize(&event, NULL, NULL, 1,
                                                  flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
    ev(e, &event, ok);
}

static void seq_end(emit *e)
{
    yaml_event_t event;
    ev(e, &event, yaml_sequence_end_event_initialize(&event));
}

/* Keys of one mapping made unique ("name", "name#2", ...): a stage that runs
 * twice in the pipeline still gives a valid mapping. */
static const char *unique_key(char (*seen)[80], int nseen, const char *name, char *buf, size_t len)
{
    const char *base = name ? name : "";
    snprintf(buf, len, "%s", base);
    for (int dup = 2;; dup++) {
        int clash = 0;
        for (int i = 0; i < nseen && !clash; i++)
            clash = strcmp(seen[i], buf) == 0;
        if (!clash)
            return buf;
        snprintf(buf, len, "%s#%d", base, dup);
    }
}

static void write_frame(emit *e, const floe_record *r, const rec_frame *fr)
{
    const floe_frame_stats *st = &fr->st;
    map_begin(e, 1);
    key(e, "frame"), inum(e, st->frame);
    key(e, "time"), num(e, st->time);
    key(e, "steps"), unum(e, st->steps);
    key(e, "dt_min"), num(e, st->dt_min);
    key(e, "dt_max"), num(e, st->dt_max);
    key(e, "particles"), unum(e, st->particles);
    key(e, "max_speed"), num(e, st->max_speed);
    key(e, "density_error_avg"), num(e, st->density_err_avg);
    key(e, "density_error_max"), num(e, st->density_err_max);
    key(e, "kinetic_energy"), num(e, st->kinetic);
    key(e, "potential_energy"), num(e, st->potential);
    key(e, "wall_s"), num(e, st->wall_s);

    int nst = r->nstages < 0 ? 0 : r->nstages > REC_MAX_STAGES ? REC_MAX_STAGES : r->nstages;
    key(e, "stage_ms");
    map_begin(e, 1);
    char seen[REC_MAX_STAGES][80];
    for (int i = 0; i < nst; i++) {
        unique_key(seen, i, r->stages[i].name, seen[i], sizeof seen[i]);
        key(e, seen[i]), num(e, fr->stage_ms[i]);
    }
    map_end(e);

    int nstats = fr->nstats < 0 ? 0 : fr->nstats > REC_MAX_STATS ? REC_MAX_STATS : fr->nstats;
    if (nstats > 0) {
        key(e, "stats");
        map_begin(e, 1);
        char sseen[REC_MAX_STATS][80];
        for (int i = 0; i < nstats; i++) {
            unique_key(sseen, i, fr->stats[i].name, sseen[i], sizeof sseen[i]);
            key(e, sseen[i]);
            map_begin(e, 1);
            key(e, "mean"), num(e, fr->stats[i].mean);
            key(e, "max"), num(e, fr->stats[i].max);
            map_end(e);
        }
        map_end(e);
    }
    if (fr->nranks > 0) { /* MPI: one entry per rank */
        key(e, "ranks");
        seq_begin(e, 1);
        for (int r = 0; r < fr->nranks && r < 64; r++) {
            map_begin(e, 1);
            key(e, "particles"), unum(e, fr->rank_particles[r]);
            key(e, "step_ms"), num(e, fr->rank_step_ms[r]);
            key(e, "comm_ms"), num(e, fr->rank_comm_ms[r]);
            map_end(e);
        }
        seq_end(e);
    }
    int nsets = fr->nsets < 0 ? 0 : fr->nsets > REC_MAX_SETS ? REC_MAX_SETS : fr->nsets;
    if (nsets > 0) { /* parameters changed while the run went on (floe view's panel) */
        key(e, "set");
        map_begin(e, 1);
        for (int i = 0; i < nsets; i++)
            key(e, fr->set_key[i]), str(e, fr->set_value[i]);
        map_end(e);
    }
    map_end(e);
}

/* The whole record, or (with_frames 0) everything but the frames: the
 * caller then writes "frames:" and appends one line per frame. */
static void write_record(emit *e, const floe_record *r, int with_frames)
{
    yaml_event_t event;
    ev(e, &event, yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING));
    ev(e, &event, yaml_document_start_event_initialize(&event, NULL, NULL, NULL, 1));
    map_begin(e, 0);

    key(e, "floe");
    map_begin(e, 1);
    key(e, "version"), str(e, r->floe_version);
    map_end(e);

    key(e, "scene");
    map_begin(e, 1);
    key(e, "path"), str(e, r->scene_path);
    key(e, "hash"), str(e, r->scene_hash);
    map_end(e);

    key(e, "started"), str(e, r->started);
    key(e, "backend"), str(e, r->backend);
    key(e, "threads"), inum(e, r->threads);
    key(e, "dim"), inum(e, r->dim);
    key(e, "spacing"), num(e, r->spacing);
    key(e, "support"), num(e, r->support);

    key(e, "time_step");
    map_begin(e, 1);
    key(e, "mode"), str(e, r->dt_fixed > 0 ? "fixed" : "adaptive");
    key(e, "dt"), num(e, r->dt_fixed);
    key(e, "cfl"), num(e, r->cfl);
    map_end(e);

    key(e, "fps"), num(e, r->fps);
    if (r->first_frame > 0)
        key(e, "first_frame"), inum(e, r->first_frame);

    int nmod = r->nmodules < 0 ? 0 : r->nmodules > 32 ? 32 : r->nmodules;
    key(e, "modules");
    seq_begin(e, 0);
    for (int i = 0; i < nmod; i++) {
        map_begin(e, 1);
        key(e, "name"), str(e, r->modules[i].name);
        key(e, "version"), str(e, r->modules[i].version);
        key(e, "path"), str(e, r->modules[i].path);
        map_end(e);
    }
    seq_end(e);

    int nst = r->nstages < 0 ? 0 : r->nstages > REC_MAX_STAGES ? REC_MAX_STAGES : r->nstages;
    key(e, "pipeline");
    seq_begin(e, 0);
    for (int i = 0; i < nst; i++) {
        const rec_stage *s = &r->stages[i];
        map_begin(e, 1);
        key(e, "stage"), str(e, s->name);
        key(e, "params");
        map_begin(e, 1);
        int np = s->nparams < 0 ? 0 : s->nparams > 32 ? 32 : s->nparams;
        char pseen[32][80];
        int nseen = 0;
        for (int k = 0; k < np; k++) {
            if (!s->param_name[k])
                continue;
            char v[65];
            memcpy(v, s->param_value[k], 64);
            v[64] = '\0';
            unique_key(pseen, nseen, s->param_name[k], pseen[nseen], sizeof pseen[nseen]);
            key(e, pseen[nseen++]), printed(e, v);
        }
        map_end(e);
        map_end(e);
    }
    seq_end(e);

    if (r->outside) {
        key(e, "outside");
        map_begin(e, 1);
        key(e, "rule"), str(e, r->outside);
        key(e, !strcmp(r->outside, "clamp") ? "clamped" : "deleted"), num(e, (double)r->outside_count);
        map_end(e);
    }
    key(e, "status"), str(e, r->status);
    if (r->message)
        key(e, "message"), str(e, r->message);

    if (with_frames) {
        key(e, "frames");
        seq_begin(e, 0);
        for (int i = 0; i < r->nframes && r->frames; i++)
            write_frame(e, r, &r->frames[i]);
        seq_end(e);
    }

    map_end(e);
    ev(e, &event, yaml_document_end_event_initialize(&event, 1));
    ev(e, &event, yaml_stream_end_event_initialize(&event));
}

static void emitter_setup(emit *e)
{
    yaml_emitter_set_unicode(&e->em, 1);
    yaml_emitter_set_width(&e->em, -1); /* one line per frame */
    yaml_emitter_set_indent(&e->em, 2);
}

static int write_at(int dirfd, const char *name, const floe_record *r, int with_frames)
{
    if (!name || !r) {
        errno = EINVAL;
        return -1;
    }
    io_atomic a;
    if (io_atomic_openat(&a, dirfd, name) != 0)
        return -1;
    emit e;
    memset(&e, 0, sizeof e);
    if (!yaml_emitter_initialize(&e.em)) {
        io_atomic_abort(&a);
        errno = ENOMEM;
        return -1;
    }
    yaml_emitter_set_output_file(&e.em, a.f);
    emitter_setup(&e);
    write_record(&e, r, with_frames);
    if (!e.failed && !yaml_emitter_flush(&e.em))
        e.failed = 1;
    yaml_emitter_delete(&e.em);
    if (!e.failed && !with_frames && fputs("frames:\n", a.f) == EOF)
        e.failed = 1;
    if (e.failed) {
        io_atomic_abort(&a);
        errno = EIO;
        return -1;
    }
    return io_atomic_commit(&a);
}

int rec_write(const char *path, const floe_record *r) { return write_at(AT_FDCWD, path, r, 1); }
int rec_write_at(int dirfd, const char *name, const floe_record *r) { return write_at(dirfd, name, r, 1); }

int rec_begin_at(int dirfd, const char *name, const floe_record *r)
{
    if (write_at(dirfd, name, r, 0) != 0)
        return -1;
    return openat(dirfd, name, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
}

/* One frame as the line "- {frame: ...}" of the block sequence "frames". */
int rec_append_frame(int fd, const floe_record *r, const rec_frame *fr)
{
    static const size_t cap = 64 * 1024;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    size_t written = 0;
    emit e;
    memset(&e, 0, sizeof e);
    if (!yaml_emitter_initialize(&e.em)) {
        free(buf);
        errno = ENOMEM;
        return -1;
    }
    yaml_emitter_set_output_string(&e.em, buf, cap, &written);
    emitter_setup(&e);
    yaml_event_t event;
    ev(&e, &event, yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING));
    ev(&e, &event, yaml_document_start_event_initialize(&event, NULL, NULL, NULL, 1));
    seq_begin(&e, 0);
    write_frame(&e, r, fr);
    seq_end(&e);
    ev(&e, &event, yaml_document_end_event_initialize(&event, 1));
    ev(&e, &event, yaml_stream_end_event_initialize(&event));
    if (!e.failed && !yaml_emitter_flush(&e.em))
        e.failed = 1;
    yaml_emitter_delete(&e.em);
    int rc = -1;
    if (e.failed || written == 0 || buf[written - 1] != '\n')
        errno = EIO;
    else {
        /* one write: a killed process leaves the line whole or absent */
        ssize_t w = write(fd, buf, written);
        if (w == (ssize_t)written)
            rc = 0;
        else if (w >= 0)
            errno = ENOSPC;
    }
    free(buf);
    return rc;
}
