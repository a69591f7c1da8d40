/* floe view: a finished run's folder. Every file NAME.NNNN.ply|obj is one
 * frame of sequence NAME (particles, or a mesh when it has faces: surfaces,
 * rigid bodies, carpets, whatever a module writes), found by pattern, not by
 * name; a sequence of one file (the walls) and a file NAME.ply|obj written
 * once (the terrain) are shown at every frame. run.yaml
 * (docs/reliability.md) gives each frame's simulated time, wall time and
 * density error, the scene and the modules. */
#include "vw.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* NAME.NNNN.ext: 1 with the parts; NAME.ext (a mesh written once, like the
 * terrain's terrain.ply): 1 with *num = -1 */
static int split_name(const char *fn, char *name, int *num, char *ext)
{
    size_t len = strlen(fn);
    const char *dot2 = strrchr(fn, '.');
    if (len < 5 || !dot2 || (strcmp(dot2, ".ply") && strcmp(dot2, ".obj")) || dot2 == fn)
        return 0;
    snprintf(ext, 4, "%s", dot2 + 1);
    const char *d = dot2;
    while (d > fn && isdigit((unsigned char)d[-1]))
        d--;
    if (dot2 - d >= 4 && d > fn + 1 && d[-1] == '.' && d - 1 - fn < VW_NAME) {
        snprintf(name, VW_NAME, "%.*s", (int)(d - 1 - fn), fn);
        *num = atoi(d);
        return 1;
    }
    if (dot2 - fn >= VW_NAME || memchr(fn, '.', (size_t)(dot2 - fn))) /* other dotted names: not ours */
        return 0;
    snprintf(name, VW_NAME, "%.*s", (int)(dot2 - fn), fn);
    *num = -1;
    return 1;
}

static const char *scalar(yaml_document_t *doc, yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
    (void)doc;
}

static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
        if (k && !strcmp(k, key))
            return yaml_document_get_node(doc, p->value);
    }
    return NULL;
}

static double map_num(yaml_document_t *doc, yaml_node_t *map, const char *key, double def)
{
    const char *s = scalar(doc, map_get(doc, map, key));
    return s ? strtod(s, NULL) : def;
}

/* One record's frames by file number (first_frame + frame); 1 when read.
 * The scene, method and status are the first record's. */
static int read_one(vw_rundir *d, const char *name, int again, double *fps_out, int *first_out)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", d->path, name);
    double fps = 30;
    int first = 0, have = 0;
    FILE *f = fopen(path, "rb");
    yaml_parser_t ps;
    yaml_document_t doc;
    if (f && yaml_parser_initialize(&ps)) {
        yaml_parser_set_input_file(&ps, f);
        if (yaml_parser_load(&ps, &doc)) {
            yaml_node_t *root = yaml_document_get_root_node(&doc);
            if (root) {
                have = 1;
                fps = map_num(&doc, root, "fps", 30);
                first = (int)map_num(&doc, root, "first_frame", 0);
                d->dim = (int)map_num(&doc, root, "dim", 3);
                d->spacing = map_num(&doc, root, "spacing", 0);
                const char *st = scalar(&doc, map_get(&doc, root, "status"));
                snprintf(d->status, sizeof d->status, "%s", st ? st : "");
                const char *sp = scalar(&doc, map_get(&doc, map_get(&doc, root, "scene"), "path"));
                if (sp && !again) {
                    const char *b = strrchr(sp, '/');
                    snprintf(d->scene, sizeof d->scene, "%s", b ? b + 1 : sp);
                    char *dot = strrchr(d->scene, '.');
                    if (dot && !strcmp(dot, ".lua"))
                        *dot = 0;
                }
                yaml_node_t *mods = map_get(&doc, root, "modules");
                if (mods && mods->type == YAML_SEQUENCE_NODE && !again)
                    for (yaml_node_item_t *it = mods->data.sequence.items.start; it < mods->data.sequence.items.top; it++) {
                        const char *mn = scalar(&doc, map_get(&doc, yaml_document_get_node(&doc, *it), "name"));
                        /* helpers that do not solve anything */
                        if (!mn || !strcmp(mn, "core") || !strcmp(mn, "hello") || !strcmp(mn, "surface") || !strcmp(mn, "raycast"))
                            continue;
                        size_t l = strlen(d->method);
                        snprintf(d->method + l, sizeof d->method - l, "%s%s", l ? "+" : "", mn);
                    }
                yaml_node_t *fr = map_get(&doc, root, "frames");
                if (fr && fr->type == YAML_SEQUENCE_NODE)
                    for (yaml_node_item_t *it = fr->data.sequence.items.start; it < fr->data.sequence.items.top; it++) {
                        yaml_node_t *m = yaml_document_get_node(&doc, *it);
                        int num = first + (int)map_num(&doc, m, "frame", -1);
                        for (int k = 0; k < d->nframes; k++)
                            if (d->frame_num[k] == num) {
                                d->time[k] = map_num(&doc, m, "time", d->time[k]);
                                d->wall[k] = map_num(&doc, m, "wall_s", 0);
                                d->derr[k] = map_num(&doc, m, "density_error_avg", 0);
                            }
                    }
            }
            yaml_document_delete(&doc);
        }
        yaml_parser_delete(&ps);
    }
    if (f)
        fclose(f);
    *fps_out = fps;
    *first_out = first;
    return have;
}

/* run.yaml, then run.2.yaml, run.3.yaml ... (later sim:run calls into the
 * same folder continue its numbering) */
static void read_record(vw_rundir *d)
{
    double fps = 30, fps_k;
    int first = 0, first_k, have = 0;
    char name[32];
    for (int k = 1; k < 1000; k++) {
        snprintf(name, sizeof name, k == 1 ? "run.yaml" : "run.%d.yaml", k);
        if (!read_one(d, name, k > 1, &fps_k, &first_k))
            break;
        if (!have)
            fps = fps_k, first = first_k;
        have = 1;
    }
    if (!have) {
        for (int k = 0; k < d->nframes; k++)
            d->time[k] = d->frame_num[k] / fps;
        return;
    }
    /* frame 0 (the start) is not in the record: one frame interval before frame 1 */
    for (int k = 0; k < d->nframes; k++)
        if (d->frame_num[k] == first && d->nframes > 1)
            d->time[k] = d->time[k + 1] - 1 / fps > 0 ? d->time[k + 1] - 1 / fps : 0;
    /* a frame no record names (a run cut short): one interval after the one before */
    for (int k = 1; k < d->nframes; k++)
        if (!(d->time[k] > d->time[k - 1]))
            d->time[k] = d->time[k - 1] + 1 / fps;
}

int vw_rundir_open(vw_rundir *d, const char *path, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "%s", path);
    DIR *dir = opendir(path);
    if (!dir) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct dirent *e;
    size_t cap[VW_MAX_CLOUDS + VW_MAX_MESHES] = {0};
    while ((e = readdir(dir))) {
        char name[VW_NAME], ext[4];
        int num;
        if (!split_name(e->d_name, name, &num, ext))
            continue;
        int s = 0;
        while (s < d->nseq && (strcmp(d->seq[s].name, name) || strcmp(d->seq[s].ext, ext)))
            s++;
        if (s == d->nseq) {
            if (d->nseq == VW_MAX_CLOUDS + VW_MAX_MESHES)
                continue;
            snprintf(d->seq[s].name, VW_NAME, "%s", name);
            snprintf(d->seq[s].ext, 4, "%s", ext);
            d->seq[s].mesh = !strcmp(ext, "obj");
            d->nseq++;
        }
        vw_seq *q = &d->seq[s];
        if ((size_t)q->nfiles == cap[s]) {
            cap[s] = cap[s] ? 2 * cap[s] : 64;
            int *n2 = realloc(q->num, cap[s] * sizeof *n2);
            if (!n2)
                break;
            q->num = n2;
        }
        q->num[q->nfiles++] = num;
    }
    closedir(dir);
    /* a mesh written as both OBJ and PLY (floe surface): the PLY (binary) only */
    for (int s = 0; s < d->nseq; s++)
        if (!strcmp(d->seq[s].ext, "obj"))
            for (int t = 0; t < d->nseq; t++)
                if (t != s && !strcmp(d->seq[t].ext, "ply") && !strcmp(d->seq[t].name, d->seq[s].name)) {
                    free(d->seq[s].num);
                    d->seq[s] = d->seq[--d->nseq];
                    s--;
                    break;
                }
    if (d->nseq == 0) {
        snprintf(err, errlen, "%s: no frames (NAME.NNNN.ply or .obj) in this folder", path);
        return -1;
    }
    size_t total = 0;
    for (int s = 0; s < d->nseq; s++) {
        qsort(d->seq[s].num, (size_t)d->seq[s].nfiles, sizeof(int), cmp_int);
        total += (size_t)d->seq[s].nfiles;
    }
    int *all = malloc(sizeof(int) * (total + 1));
    if (!all) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (int s = 0; s < d->nseq; s++)
        if (d->seq[s].nfiles > 1 || d->nseq == 1)
            for (int k = 0; k < d->seq[s].nfiles; k++)
                all[n++] = d->seq[s].num[k];
    if (n == 0) /* every sequence static: one frame */
        all[n++] = d->seq[0].num[0];
    qsort(all, n, sizeof(int), cmp_int);
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (u == 0 || all[u - 1] != all[k])
            all[u++] = all[k];
    d->nframes = (int)u;
    d->frame_num = all;
    d->time = calloc(u, sizeof(double));
    d->wall = calloc(u, sizeof(double));
    d->derr = calloc(u, sizeof(double));
    if (!d->time || !d->wall || !d->derr) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->dim = 3;
    read_record(d);
    if (!d->scene[0]) {
        const char *b = strrchr(path, '/');
        snprintf(d->scene, sizeof d->scene, "%s", b && b[1] ? b + 1 : path);
    }
    return 0;
}

void vw_rundir_close(vw_rundir *d)
{
    for (int s = 0; s < d->nseq; s++)
        free(d->seq[s].num);
    free(d->frame_num);
    free(d->time);
    free(d->wall);
    free(d->derr);
    memset(d, 0, sizeof *d);
}

int vw_rundir_load(vw_rundir *d, int k, vw_frame *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    if (k < 0 || k >= d->nframes) {
        snprintf(err, errlen, "%s: no frame %d (it has %d)", d->path, k, d->nframes);
        return -1;
    }
    int num = d->frame_num[k];
    f->time = d->time[k];
    f->spacing = (float)d->spacing;
    f->dim = d->dim;
    for (int s = 0; s < d->nseq; s++) {
        vw_seq *q = &d->seq[s];
        int pick = -1, found = 0; /* the last file at or before this frame (a static one: always) */
        for (int j = 0; j < q->nfiles; j++)
            if (q->num[j] <= num || q->nfiles == 1)
                pick = q->num[j], found = 1;
        if (!found)
            continue;
        char path[4400];
        if (pick < 0) /* written once, unnumbered */
            snprintf(path, sizeof path, "%s/%s.%s", d->path, q->name, q->ext);
        else
            snprintf(path, sizeof path, "%s/%s.%04d.%s", d->path, q->name, pick, q->ext);
        vw_cloud c;
        vw_mesh m;
        int is_mesh = 0;
        if (!strcmp(q->ext, "obj")) {
            if (vw_read_obj(path, &m, err, errlen))
                return vw_frame_free(f), -1;
            is_mesh = 1;
        } else if (vw_read_ply(path, &c, &m, &is_mesh, err, errlen))
            return vw_frame_free(f), -1;
        q->mesh = is_mesh;
        if (is_mesh) {
            if (f->nmeshes < VW_MAX_MESHES) {
                snprintf(m.name, VW_NAME, "%s", q->name);
                f->meshes[f->nmeshes++] = m;
            } else
                vw_mesh_free(&m);
        } else {
            if (f->nclouds < VW_MAX_CLOUDS) {
                snprintf(c.name, VW_NAME, "%s", q->name);
                /* walls: a set written once, or named so */
                c.boundary = (q->nfiles == 1 && d->nframes > 1) || !strncmp(q->name, "boundary", 8);
                f->clouds[f->nclouds++] = c;
            } else
                vw_cloud_free(&c);
        }
    }
    return 0;
}
