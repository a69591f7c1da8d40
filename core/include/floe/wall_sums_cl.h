/* Floe: the OpenCL side of <floe/wall_sums.h> (header only): the loop over
 * the static wall sets of a fluid set's boundary targets, with the lists
 * from the fluid to each, for kernels that scatter fluid values into the
 * wall sums (kernels/wcsph/walls.cl, kernels/viscosity/walls.cl).
 *
 *   floe_cl_wall_row wr;
 *   int more;
 *   for (int l = 0; (more = floe_walls_cl_next(api, ctx, w, &f[s], b, nb, &l, &wr)) > 0; l++)
 *       ... launch with wr.r (the lists) and wr.off (the set's first sum) ...
 *   if (more < 0)
 *       return more; */
#ifndef FLOE_WALL_SUMS_CL_H
#define FLOE_WALL_SUMS_CL_H

#include <floe/cl_module.h>
#include <floe/wall_sums.h>

typedef struct floe_cl_wall_row {
    floe_cl_row r; /* the lists from the fluid set to the wall set, its positions */
    uint32_t off;  /* the wall set's first particle in the sums */
} floe_cl_wall_row;

/* the next static, non-empty wall set among b[*l..nb): 1 with *l its index
 * and *wr filled, 0 when there is none left, or a failure's status (< 0) */
static inline int floe_walls_cl_next(const floe_api *api, floe_ctx *ctx, const floe_walls *w, const floe_cl_set *f,
                                     const floe_cl_set *b, int nb, int *l, floe_cl_wall_row *wr)
{
    for (; *l < nb; ++*l) {
        const int k = floe_walls_slot(w, b[*l].set);
        if (k < 0 || !w->is_static[k] || b[*l].info.n == 0)
            continue;
        wr->off = (uint32_t)w->off[k];
        const int st = floe_cl_row_get(api, ctx, f, &b[*l], 0, &wr->r);
        return st ? st : 1;
    }
    return 0;
}

#endif
