/* Domain decomposition over MPI: what its files share at the bottom
 * (decomp_int.h): the clock of its figures, growing buffers, a particle's
 * row of attributes as bytes, an MPI failure as the context's error, and
 * the point-to-point exchange with the partners (MPI_Isend/Irecv). */
#include "decomp.h"

#include <floe/floe.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FLOE_HAVE_MPI
#include "decomp_int.h"

/* this process's rank in MPI_COMM_WORLD (before a decomposition exists) */
static int world_rank(void)
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

double dd_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int dd_grow(char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = need + need / 2 + 4096;
    char *q = realloc(*p, n);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

size_t dd_row_bytes(const pset *p)
{
    size_t b = 0;
    for (int a = 0; a < p->nattrs; a++)
        b += floe_type_size(p->attrs[a].type);
    return b;
}

void dd_pack_row(const pset *p, uint32_t i, char *dst)
{
    for (int a = 0; a < p->nattrs; a++) {
        size_t es = floe_type_size(p->attrs[a].type);
        memcpy(dst, (const char *)p->attrs[a].data + (size_t)i * es, es);
        dst += es;
    }
}

void dd_unpack_row(pset *p, uint32_t i, const char *src)
{
    for (int a = 0; a < p->nattrs; a++) {
        size_t es = floe_type_size(p->attrs[a].type);
        memcpy((char *)p->attrs[a].data + (size_t)i * es, src, es);
        src += es;
    }
}

int dd_mpi_fail(floe_ctx *ctx, int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return ctx_fail(ctx, FLOE_ERR, "MPI (rank %d): %s failed: %s", ctx->dd ? ctx->dd->rank : world_rank(), what, s);
}

/* ---- point to point with the partners ---------------------------------------- */

/* dd_xchg (decomp_int.h): only the partners talk, a rank sends to and
 * receives from its neighbouring boxes, not every rank */
int dd_xchg(floe_ctx *ctx, struct floe_dd *d, int np, const int *peer, const char *sbuf, const size_t *sc,
            const size_t *so, char *rbuf, const size_t *rc, const size_t *ro, int tag, const char *what)
{
    int nr = 0, e = MPI_SUCCESS;
    double t0 = dd_now_ms();
    for (int k = 0; k < np && e == MPI_SUCCESS; k++) {
        if (sc[k] > (size_t)INT32_MAX || rc[k] > (size_t)INT32_MAX)
            return ctx_fail(ctx, FLOE_ERR, "MPI: more than 2 GiB to exchange with rank %d in one message on rank %d (%s)",
                            peer[k], d->rank, what);
        if (rc[k])
            e = MPI_Irecv(rbuf + ro[k], (int)rc[k], MPI_BYTE, peer[k], tag, d->comm, &d->req[nr++]);
    }
    for (int k = 0; k < np && e == MPI_SUCCESS; k++)
        if (sc[k])
            e = MPI_Isend(sbuf + so[k], (int)sc[k], MPI_BYTE, peer[k], tag, d->comm, &d->req[nr++]);
    if (e == MPI_SUCCESS)
        e = MPI_Waitall(nr, d->req, MPI_STATUSES_IGNORE);
    d->ph_mpi[d->phase] += dd_now_ms() - t0;
    return e == MPI_SUCCESS ? FLOE_OK : dd_mpi_fail(ctx, e, what);
}

#endif
