/* Frames under MPI (docs/mpi.md, "Frames"). Each rank writes its part of
 * a fluid set's frame: its owned particles sorted by id, as blocks of
 * 32-bit words (ids, positions, then each column), to
 * BASE.NNNN.rR.part in the run folder (written to a temporary name and
 * renamed, as every frame). Once every rank has written (a reduction says
 * so), rank 0 joins the parts into BASE.NNNN.ply and/or .vtk, the same
 * file one process writes: a merge of the parts by id, row by row, reading
 * each part through small buffers (pread), so rank 0 never holds the
 * frame: a few buffers per rank and per column. PLY is written in one pass
 * (rows interleave every column); legacy VTK, whose columns are blocks,
 * in one pass per column. The parts are removed after the join.
 *
 * A part file: words magic, version, n, ncols, the columns' types, then
 * the blocks: n ids, 3n position words, then per column n or 3n words, in
 * the host's byte order (the ranks of one job share it). */
#include "decomp_io.h"
#include "decomp.h"
#include "out_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FLOE_HAVE_MPI

enum { PART_MAGIC = 0x54524150u, PART_VERSION = 1, HEAD_WORDS = 4, CHUNK = 16384 /* words */ };

static int words_of(floe_type t) { return t == FLOE_VEC3 ? 3 : 1; }

typedef struct id_ord {
    uint32_t id, i;
} id_ord;

static int cmp_id(const void *a, const void *b)
{
    const id_ord *u = a, *v = b;
    return u->id < v->id ? -1 : u->id > v->id;
}

/* block of `per` words a particle, in the order ord */
static int write_block(FILE *f, uint32_t *buf, const void *src, int per, const id_ord *ord, uint32_t n)
{
    const uint32_t *s = src;
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        for (int w = 0; w < per; w++)
            buf[k++] = s[(size_t)ord[i].i * (size_t)per + (size_t)w];
        if (k + 3 > CHUNK || i + 1 == n) {
            if (fwrite(buf, 4, k, f) != k)
                return -1;
            k = 0;
        }
    }
    return 0;
}

/* this rank's part: n particles sorted by id */
static int write_part(int dirfd, const char *name, uint32_t n, const uint32_t *id, const float *x,
                      const io_column *cols, int nc)
{
    id_ord *ord = malloc((size_t)n * sizeof *ord + 1);
    uint32_t *buf = malloc(CHUNK * 4);
    if (!ord || !buf) {
        free(ord), free(buf);
        errno = ENOMEM;
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        ord[i] = (id_ord){id[i], i};
    qsort(ord, n, sizeof *ord, cmp_id);
    io_atomic a;
    int r = io_atomic_openat(&a, dirfd, name);
    if (!r) {
        uint32_t head[HEAD_WORDS + MAX_ATTRS + 1] = {PART_MAGIC, PART_VERSION, n, (uint32_t)nc};
        for (int c = 0; c < nc; c++)
            head[HEAD_WORDS + c] = (uint32_t)cols[c].type;
        r = fwrite(head, 4, (size_t)(HEAD_WORDS + nc), a.f) != (size_t)(HEAD_WORDS + nc);
        r = r || write_block(a.f, buf, id, 1, ord, n) || write_block(a.f, buf, x, 3, ord, n);
        for (int c = 0; c < nc && !r; c++)
            r = write_block(a.f, buf, cols[c].data, words_of(cols[c].type), ord, n);
        if (r || ferror(a.f)) {
            int e = errno ? errno : EIO;
            io_atomic_abort(&a);
            errno = e;
            r = -1;
        } else
            r = io_atomic_commit(&a);
    }
    free(ord), free(buf);
    return r;
}

/* ---- the join on rank 0 ------------------------------------------------------ */

/* a block of a part file read forward through a small buffer */
typedef struct cursor {
    int fd;
    off_t off;
    uint32_t buf[1024];
    size_t pos, len;
} cursor;

static void cur_at(cursor *c, int fd, off_t off)
{
    c->fd = fd;
    c->off = off;
    c->pos = c->len = 0;
}

static int cur_read(cursor *c, uint32_t *out, int words)
{
    for (int w = 0; w < words; w++) {
        if (c->pos == c->len) {
            ssize_t got = pread(c->fd, c->buf, sizeof c->buf, c->off);
            if (got < 4) {
                if (got >= 0)
                    errno = EIO; /* shorter than its header says */
                return -1;
            }
            c->off += got & ~(ssize_t)3;
            c->len = (size_t)got / 4;
            c->pos = 0;
        }
        out[w] = c->buf[c->pos++];
    }
    return 0;
}

typedef struct part {
    int fd;
    uint32_t n, left, head;
    off_t block[MAX_ATTRS + 4]; /* byte offsets: ids, x, each column, the end */
    cursor id, col;             /* the ids; the block a pass reads */
} part;

/* the parts not yet done, a binary min-heap by their next id: a merge of
 * np parts costs log np comparisons a particle */
typedef struct heap {
    part *pt;
    int *h, n;
} heap;

static void sift(heap *m, int i)
{
    for (;;) {
        int s = i, l = 2 * i + 1, r = l + 1;
        if (l < m->n && m->pt[m->h[l]].head < m->pt[m->h[s]].head)
            s = l;
        if (r < m->n && m->pt[m->h[r]].head < m->pt[m->h[s]].head)
            s = r;
        if (s == i)
            return;
        int t = m->h[i];
        m->h[i] = m->h[s], m->h[s] = t;
        i = s;
    }
}

/* the part holding the smallest next id, -1 when every part is done */
static int top(const heap *m) { return m->n ? m->h[0] : -1; }

/* the top part moved on (its head is its next id, or it is done) */
static void next(heap *m)
{
    if (!m->pt[m->h[0]].left)
        m->h[0] = m->h[--m->n];
    sift(m, 0);
}

/* every part at the start of its ids and of block `block`; the heap built */
static int pass_begin(heap *m, part *pt, int np, int block)
{
    m->pt = pt;
    m->n = 0;
    for (int r = 0; r < np; r++) {
        cur_at(&pt[r].id, pt[r].fd, pt[r].block[0]);
        cur_at(&pt[r].col, pt[r].fd, pt[r].block[block]);
        pt[r].left = pt[r].n;
        if (pt[r].left && cur_read(&pt[r].id, &pt[r].head, 1))
            return -1;
        if (pt[r].left)
            m->h[m->n++] = r;
    }
    for (int i = m->n / 2 - 1; i >= 0; i--)
        sift(m, i);
    return 0;
}

/* the picked part's next `words` words of the pass's block; its next id */
static int take(part *q, uint32_t *out, int words)
{
    if (cur_read(&q->col, out, words))
        return -1;
    q->left--;
    return q->left ? cur_read(&q->id, &q->head, 1) : 0;
}

static void put_be(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
    p[3] = (unsigned char)v;
}

static void put_le(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16),
    p[3] = (unsigned char)(v >> 24);
}

/* one block of the output merged by id: `words` words a particle from
 * block `block` of the parts, big-endian (VTK) or little-endian (PLY rows
 * are written by join_ply) */
static int merge_block(FILE *f, heap *m, part *pt, int np, int block, int words, unsigned char *buf)
{
    if (pass_begin(m, pt, np, block))
        return -1;
    size_t k = 0;
    uint32_t w[3];
    for (int r; (r = top(m)) >= 0; next(m)) {
        if (take(&pt[r], w, words))
            return -1;
        for (int j = 0; j < words; j++, k += 4)
            put_be(buf + k, w[j]);
        if (k + 12 > 4 * CHUNK) {
            if (fwrite(buf, 1, k, f) != k)
                return -1;
            k = 0;
        }
    }
    return (k && fwrite(buf, 1, k, f) != k) || fputc('\n', f) == EOF ? -1 : 0;
}

static int join_vtk(FILE *f, heap *m, part *pt, int np, uint32_t N, const io_column *cols, int nc,
                    unsigned char *buf)
{
    fprintf(f, "# vtk DataFile Version 3.0\nFloe particles\nBINARY\nDATASET POLYDATA\nPOINTS %lu float\n",
            (unsigned long)N);
    if (N == 0) /* as io_write_vtk: points only */
        return 0;
    if (merge_block(f, m, pt, np, 1, 3, buf) || io_vtk_vertices(f, N))
        return -1;
    fprintf(f, "POINT_DATA %lu\n", (unsigned long)N);
    for (int c = 0; c < nc; c++) {
        io_vtk_column_header(f, &cols[c]);
        if (merge_block(f, m, pt, np, 2 + c, words_of(cols[c].type), buf))
            return -1;
    }
    return 0;
}

/* PLY rows interleave every column: one cursor per block and part */
static int join_ply(FILE *f, heap *m, part *pt, int np, uint32_t N, const io_column *cols, int nc,
                    unsigned char *buf)
{
    io_ply_header(f, N, cols, nc);
    cursor *cur = malloc((size_t)np * (size_t)(nc + 1) * sizeof *cur);
    if (!cur) {
        errno = ENOMEM;
        return -1;
    }
    int rc = pass_begin(m, pt, np, 1);
    for (int r = 0; r < np; r++)
        for (int c = 0; c <= nc; c++)
            cur_at(&cur[r * (nc + 1) + c], pt[r].fd, pt[r].block[1 + c]);
    size_t k = 0;
    uint32_t w[3];
    for (int r; !rc && (r = top(m)) >= 0;) {
        for (int c = 0; c <= nc && !rc; c++) {
            const int words = c == 0 ? 3 : words_of(cols[c - 1].type);
            rc = cur_read(&cur[r * (nc + 1) + c], w, words);
            for (int j = 0; j < words; j++, k += 4)
                put_le(buf + k, w[j]);
        }
        pt[r].left--;
        if (!rc && pt[r].left)
            rc = cur_read(&pt[r].id, &pt[r].head, 1);
        next(m);
        if (!rc && k + 4 * 3 * (size_t)(MAX_ATTRS + 2) > 4 * CHUNK) {
            rc = fwrite(buf, 1, k, f) != k;
            k = 0;
        }
    }
    if (!rc && k && fwrite(buf, 1, k, f) != k)
        rc = -1;
    free(cur);
    return rc;
}

/* the parts' headers: their counts, types and block offsets; *N the total */
static int open_parts(int dirfd, const char *base, int number, int np, const io_column *cols, int nc, part *pt,
                      uint32_t *N, char *why, size_t wlen)
{
    uint64_t total = 0;
    for (int r = 0; r < np; r++) {
        char name[1024];
        snprintf(name, sizeof name, "%s.%04d.r%d.part", base, number, r);
        uint32_t head[HEAD_WORDS + MAX_ATTRS + 1];
        const size_t hw = (size_t)(HEAD_WORDS + nc);
        if ((pt[r].fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0 ||
            pread(pt[r].fd, head, hw * 4, 0) != (ssize_t)(hw * 4)) {
            snprintf(why, wlen, "%s: %s", name, errno ? strerror(errno) : "shorter than its header");
            return -1;
        }
        int ok = head[0] == PART_MAGIC && head[1] == PART_VERSION && head[3] == (uint32_t)nc;
        for (int c = 0; c < nc && ok; c++)
            ok = head[HEAD_WORDS + c] == (uint32_t)cols[c].type;
        if (!ok) {
            snprintf(why, wlen, "%s: not a part of this frame (its header differs)", name);
            return -1;
        }
        pt[r].n = head[2];
        pt[r].block[0] = (off_t)(hw * 4);
        pt[r].block[1] = pt[r].block[0] + (off_t)pt[r].n * 4;
        pt[r].block[2] = pt[r].block[1] + (off_t)pt[r].n * 12;
        for (int c = 0; c < nc; c++)
            pt[r].block[3 + c] = pt[r].block[2 + c] + (off_t)pt[r].n * 4 * words_of(cols[c].type);
        total += pt[r].n;
    }
    if (total > UINT32_MAX) {
        snprintf(why, wlen, "a frame of %llu particles (at most 2^32 - 1 a file)", (unsigned long long)total);
        return -1;
    }
    *N = (uint32_t)total;
    return 0;
}

static int join(floe_ctx *ctx, int dirfd, const char *dir_name, const char *base, int number, unsigned fmts, int np,
                const io_column *cols, int nc)
{
    part *pt = calloc((size_t)np, sizeof *pt);
    unsigned char *buf = malloc(4 * CHUNK);
    heap m = {pt, malloc((size_t)np * sizeof(int)), 0};
    char why[1200] = "";
    int rc = FLOE_OK;
    if (!pt || !buf || !m.h) {
        free(pt), free(buf), free(m.h);
        return ctx_fail(ctx, FLOE_ERR_NOMEM, "MPI: out of memory joining frame %d", number);
    }
    for (int r = 0; r < np; r++)
        pt[r].fd = -1;
    uint32_t N = 0;
    errno = 0;
    if (open_parts(dirfd, base, number, np, cols, nc, pt, &N, why, sizeof why))
        rc = ctx_fail(ctx, FLOE_ERR_IO, "MPI: cannot join frame %s/%s.%04d: %s", dir_name, base, number, why);
    for (int f = 0; f < 2 && !rc; f++) {
        const unsigned bit = f == 0 ? FLOE_FMT_PLY : FLOE_FMT_VTK;
        if (!(fmts & bit))
            continue;
        char path[1100];
        snprintf(path, sizeof path, "%s.%04d.%s", base, number, f == 0 ? "ply" : "vtk");
        io_atomic a;
        int e = io_atomic_openat(&a, dirfd, path);
        if (!e) {
            e = f == 0 ? join_ply(a.f, &m, pt, np, N, cols, nc, buf) : join_vtk(a.f, &m, pt, np, N, cols, nc, buf);
            if (e || ferror(a.f)) {
                int en = errno ? errno : EIO;
                io_atomic_abort(&a);
                errno = en;
                e = -1;
            } else
                e = io_atomic_commit(&a);
        }
        if (e)
            rc = ctx_fail(ctx, FLOE_ERR_IO, "cannot write frame %s/%s: %s", dir_name, path, strerror(errno));
    }
    for (int r = 0; r < np; r++) {
        if (pt[r].fd >= 0)
            close(pt[r].fd);
        char name[1024];
        snprintf(name, sizeof name, "%s.%04d.r%d.part", base, number, r);
        if (!rc)
            unlinkat(dirfd, name, 0);
    }
    free(pt), free(buf), free(m.h);
    return rc;
}

int dd_frame_folder(floe_ctx *ctx, const char *out_dir, int *first, int *dirfd)
{
    int rank = 0;
    floe_mpi_size(&rank);
    double f = rank == 0 ? *first : 0; /* also waits for rank 0 to have made the folder */
    int rc = dd_reduce(ctx, &f, 1, FLOE_REDUCE_MAX);
    if (rc)
        return rc;
    *first = (int)f;
    if (rank == 0)
        return FLOE_OK;
    char err[1500];
    if ((*dirfd = out_dir_open(ctx->out, out_dir, 0, err, sizeof err)) < 0)
        return ctx_fail(ctx, FLOE_ERR_IO, "MPI (rank %d): %s", rank, err);
    return FLOE_OK;
}

int dd_write_frame(floe_ctx *ctx, const pset *p, int dirfd, const char *dir_name, const char *base, int number,
                   unsigned fmts, uint32_t n, const float *x, const io_column *cols, int nc)
{
    int rank = 0;
    const int np = floe_mpi_size(&rank);
    const attr *ida = pset_attr((pset *)p, "id");
    if (!ida || ida->type != FLOE_U32)
        return ctx_fail(ctx, FLOE_ERR, "MPI: set '%s' has no ids to join its frame parts by", p->name);
    char name[1024];
    snprintf(name, sizeof name, "%s.%04d.r%d.part", base, number, rank);
    errno = 0;
    const int mine = write_part(dirfd, name, n, ida->data, x, cols, nc);
    char err[512] = "";
    if (mine)
        snprintf(err, sizeof err, "%s", strerror(errno ? errno : EIO));
    double ok = mine ? 0 : 1, all = ok; /* every rank's part written before rank 0 reads them */
    int rc = dd_reduce(ctx, &all, 1, FLOE_REDUCE_MIN);
    if (rc)
        return rc;
    if (mine)
        return ctx_fail(ctx, FLOE_ERR_IO, "MPI (rank %d): cannot write frame part %s/%s: %s", rank, dir_name, name,
                        err);
    if (all == 0)
        return ctx_fail(ctx, FLOE_ERR_IO, "MPI: another rank could not write its part of frame %s/%s.%04d", dir_name,
                        base, number);
    return rank == 0 ? join(ctx, dirfd, dir_name, base, number, fmts, np, cols, nc) : FLOE_OK;
}

#endif
