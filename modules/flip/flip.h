/* Floe module "flip": grid-splat PIC/FLIP liquid after Guay (2013),
 * "Simple, Rasterization-based Liquids". Internal declarations shared by the
 * files of the module (nothing here is part of the module ABI).
 *
 *   flip.c        descriptors, parameters, init/fini, entry point
 *   grid.c        grid geometry, the module's named grids, sampling
 *   splat.c       stage "splat": particles -> kernel sums on the grid
 *   grid_pass.c   stage "grid": density, pressure, velocity update, walls
 *   advect.c      stage "advect": PIC/FLIP velocity blend, RK2 positions
 *   obstacles.c   stages "obstacle" and "ground": signed distance fields
 *   flip_cl.c     the OpenCL path of every stage (run_cl), kernels/flip/
 *
 * docs/flip.md has the equations, parameters and units. */
#ifndef FLIP_INTERNAL_H
#define FLIP_INTERNAL_H

#include <floe/module.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>

extern const floe_api *flip_api; /* the core's services (set by the entry point) */

#define FLIP_MAX_SETS FLOE_MAX_SETS /* <floe/types.h> */
#define FLIP_FAR 1e9f     /* "no obstacle" distance in the phi grid */
#define FLIP_FTAB 512     /* samples of the half-space kernel fraction F(s) */

/* ---- grid geometry ------------------------------------------------------- */

/* Cell-centred grid over the sim domain plus `pad` = ceil(radius) + 1 ghost
 * layers on each side: cell i of axis k has its centre at origin[k] + i h
 * with origin[k] = domain_min[k] - (pad - 1/2) h, n[k] = ceil(L_k / h) + 2 pad.
 * Walls are at the domain faces; the ghost cells lie outside them, so a
 * kernel around any particle stays inside the grid. 2D: n[2] = 1. */
typedef struct flip_geom {
    int dim;
    uint32_t n[3];
    size_t cells;
    float h, inv_h;
    float origin[3];
    float lo[3], hi[3];   /* domain (walls) */
    float radius;         /* splat radius in cells */
    uint32_t pad;         /* ghost layers per side */
    uint32_t m[3];        /* interior cells per axis: ceil(L / h) */
    unsigned fold;        /* bit 2k (low) / 2k+1 (high): that wall lies on a cell face, the splat folds
                           * the ghost cells onto the interior instead of splatting mirror images */
    int chunks;           /* 8-cell chunks covering a kernel row */
} flip_geom;

#define FLIP_LANES 8

/* A box of cells, inclusive index ranges per axis. */
typedef struct flip_box {
    long lo[3], hi[3];
} flip_box;

static inline int flip_box_has(const flip_box *b, long i, long j, long k)
{
    return i >= b->lo[0] && i <= b->hi[0] && j >= b->lo[1] && j <= b->hi[1] && k >= b->lo[2] && k <= b->hi[2];
}

/* ---- obstacles ------------------------------------------------------------ */

enum { OB_SPHERE, OB_BOX, OB_CAPSULE, OB_PLANE, OB_METABALLS };

typedef struct flip_obstacle {
    int shape;
    float centre[3];
    float radius;      /* sphere, capsule; rounding of a box */
    float half[3];     /* box half extents */
    float axis[3];     /* capsule: half segment, ends at centre +- axis */
    float normal[3];   /* plane: unit normal pointing into the liquid */
    float blend;       /* metaballs: smooth-union width (m) */
    float vel[3];      /* linear velocity (m/s) when there is no path */
    float spin[3];     /* angular velocity (rad/s) about the centre */
    int ball0, nballs; /* metaballs: offsets into flip_state.balls (x y z r) */
    int key0, nkeys;   /* path: offsets into flip_state.keys (t x y z) */
    int loop;          /* path repeats with the period of its last key */
} flip_obstacle;

/* An obstacle placed at one time: centre, rotation (local -> world, row
 * major), velocity of the centre and angular velocity. */
typedef struct flip_posed {
    const flip_obstacle *o;
    const float *balls;
    float c[3], R[9], v[3], w[3];
    int rotated;
    float bmin[3], bmax[3]; /* world bounding box of phi < 0 (loose), planes: infinite */
} flip_posed;

/* Ground of a shallow-water scene: height b(x) = base + slope . x + bumps. */
typedef struct flip_ground {
    float base;
    float slope[3];
    float depth;       /* water depth h0 that the rest density stands for */
    int bump0, nbumps; /* offsets into flip_state.bumps (x y z height radius) */
} flip_ground;

/* ---- OpenCL path (flip_cl.c) ------------------------------------------------- */

/* The statistics of the device path (largest density ratio, particles
 * pushed out of obstacles) are written into a ring of FLIP_CL_RING steps on
 * the device and read half a ring at a time without waiting; a half is
 * reported when the ring comes back to it, FLIP_CL_HALF steps after its
 * read was queued: no step waits for the device (docs/flip.md). */
#define FLIP_CL_HALF 16
#define FLIP_CL_RING (2 * FLIP_CL_HALF)

/* Host-side state of the device path. The grids live on the device in
 * module scratch buffers (core grids have no device mirror); the host grids
 * are written back on the steps chosen by flip.grid's host_fps. */
typedef struct flip_cl_state {
    int ready;
    float scale, inv_scale; /* fixed-point units per kg (power of two) */
    int cur;                /* accumulator the next splat adds into (0, 1) */
    int clean[2];           /* accumulator known to be zero */
    int acc_used;           /* accumulator of this step's splat */
    int bins_ready;         /* splat = gather: the bins' counts exist and are zero */
    int bin_cur;            /* the counts buffer the next splat files into (0, 1) */
    int slot;               /* ctrl slot of this step: npass % FLIP_CL_RING */
    uint32_t npass;         /* grid passes so far */
    /* host copy of ctrl: the ring's two halves as last read (per step the
     * rmax bits and the pushed-out count), then this step's rmax when the
     * time step limit needs it (pinned memory from the core, else ctrl_plain) */
    int *ctrl;
    int ctrl_plain[2 * FLIP_CL_RING + 1];
    void *ev_half[2];       /* the non-blocking read of each half */
    int half_pending[2];
    uint8_t slot_rmax_done[FLIP_CL_RING]; /* rmax reported by the courant read */
    uint8_t slot_obs[FLIP_CL_RING];       /* obstacles were pushed out against */
    void *ev_rmax;
    int rmax_pending, rmax_slot;
    float stat_k, stat_gamma; /* for the time step limit from rmax */
    double courant;
    float *stage[2];        /* staging copies of the obstacle uploads (grid, advect) */
    size_t stage_cap[2];
    void *ev_stage[2];
    int nob_grid;           /* obstacles posed at t on the device (grid pass) */
    int ball0_grid;         /* offset of their balls in floats */
    int has_static, has_ground;
    double host_next_t;     /* host_fps: time of the next write-back */
    int host_started;
} flip_cl_state;

/* ---- module state ------------------------------------------------------------ */

typedef struct flip_state {
    floe_ctx *ctx;
    int ready;             /* grids created */
    flip_geom g;
    float cell_param;      /* the "cell" parameter the grids were made with */
    floe_grid g_rho, g_u, g_u_old, g_p, g_phi, g_ground;

    float *acc;            /* 4 planes of cells: sum m w, sum m w u_x, u_y, u_z */
    float *un, *uo;        /* 3 planes each: u^n+1 and u^n (SoA copies of flip.u, flip.u_old) */
    float *sn, *sd;        /* sampling = smooth: kernel-filtered u^n+1 and u^n+1 - u^n, 3 per cell */
    float *row_tmp;        /* per-thread row scratch for the filter */
    size_t row_tmp_cap;
    float *rho_obs;        /* obstacle / ground density per cell */
    uint32_t *hist;        /* splat load balance: particles per slab row */
    size_t hist_cap;

    /* The active box: the cells within 2 ceil(r) + 1 of a particle (to the
     * grid edge near walls). Every grid loop runs over it only; the public
     * grids are zero outside it (the previous box is cleared). */
    flip_box box, box_prev;
    int box_prev_valid;

    uint64_t splat_step;   /* step of the last splat (grid pass checks it) */
    int splat_done;
    uint64_t grid_step;    /* step of the last grid pass (advect checks it) */
    int grid_done;
    float rho0;            /* rest density the grid pass used */

    /* obstacles registered by flip.obstacle stages during this step */
    uint64_t obs_step;
    int obs_valid;
    flip_obstacle *obs;
    int nobs, obs_cap;
    float *balls;          /* 4 per ball */
    int nballs, balls_cap;
    float *keys;           /* 4 per key */
    int nkeys, keys_cap;
    /* what the obstacle density grid was last built from (a byte image) */
    void *snap;
    size_t snap_len;
    float *phi_static;     /* phi of the obstacles that do not move */
    float *rho_ground;     /* rho0 b / depth of the ground */
    int obs_grid_valid;

    /* ground registered by flip.ground stages during this step */
    uint64_t ground_step;
    int ground_valid;
    flip_ground *grounds;
    int ngrounds, grounds_cap;
    float *bumps;          /* 5 per bump */
    int nbumps, bumps_cap;

    /* half-space kernel fraction F(s), s = signed distance / radius in [-1, 1] */
    float ftab[FLIP_FTAB + 1];
    int ftab_dim;

    flip_cl_state cl;      /* OpenCL path */
} flip_state;

/* ---- grid.c ------------------------------------------------------------------ */

int flip_grids_ensure(floe_ctx *ctx, flip_state *s, float cell, float radius);
float *flip_grid_data(floe_ctx *ctx, floe_grid g);

/* Cell corner and weights of the trilinear (bilinear in 2D) stencil at x. */
typedef struct flip_stencil {
    size_t c0;          /* cell index of the low corner */
    size_t sy, sz;      /* index strides of y and z */
    float t[3];         /* weights of the high corner per axis */
} flip_stencil;

static inline flip_stencil flip_stencil_at(const flip_geom *g, const float x[3])
{
    flip_stencil st;
    size_t idx[3] = {0, 0, 0};
    st.t[2] = 0.0f;
    for (int k = 0; k < g->dim; k++) {
        float f = (x[k] - g->origin[k]) * g->inv_h;
        float fl = floorf(f);
        long i = (long)fl;
        float t = f - fl;
        if (i < 0) {
            i = 0;
            t = 0.0f;
        } else if (i > (long)g->n[k] - 2) {
            i = (long)g->n[k] - 2;
            t = 1.0f;
        }
        idx[k] = (size_t)i;
        st.t[k] = t;
    }
    st.sy = g->n[0];
    st.sz = (size_t)g->n[0] * g->n[1];
    st.c0 = idx[0] + idx[1] * st.sy + idx[2] * st.sz;
    return st;
}

/* Trilinear (bilinear in 2D) sample of a VEC3 grid; out[3]. */
static inline void flip_sample_vec(const flip_geom *g, const flip_stencil *st, const float *grid, float out[3])
{
    const float tx = st->t[0], ty = st->t[1], tz = st->t[2];
    const float *a = grid + 3 * st->c0, *b = a + 3 * st->sy;
    for (int k = 0; k < 3; k++) {
        float lo = (1.0f - ty) * ((1.0f - tx) * a[k] + tx * a[3 + k]) + ty * ((1.0f - tx) * b[k] + tx * b[3 + k]);
        out[k] = lo;
    }
    if (g->dim == 3) {
        const float *c = a + 3 * st->sz, *d = c + 3 * st->sy;
        for (int k = 0; k < 3; k++) {
            float hi = (1.0f - ty) * ((1.0f - tx) * c[k] + tx * c[3 + k]) + ty * ((1.0f - tx) * d[k] + tx * d[3 + k]);
            out[k] = (1.0f - tz) * out[k] + tz * hi;
        }
    }
}

static inline float flip_sample_f(const flip_geom *g, const flip_stencil *st, const float *grid)
{
    const float tx = st->t[0], ty = st->t[1], tz = st->t[2];
    const float *a = grid + st->c0, *b = a + st->sy;
    float lo = (1.0f - ty) * ((1.0f - tx) * a[0] + tx * a[1]) + ty * ((1.0f - tx) * b[0] + tx * b[1]);
    if (g->dim == 3) {
        const float *c = a + st->sz, *d = c + st->sy;
        float hi = (1.0f - ty) * ((1.0f - tx) * c[0] + tx * c[1]) + ty * ((1.0f - tx) * d[0] + tx * d[1]);
        lo = (1.0f - tz) * lo + tz * hi;
    }
    return lo;
}
/* Clamp a position into the domain with a margin; returns a bit mask of the
 * axes that were clamped (bit 2k: low face, bit 2k+1: high face). */
static inline unsigned flip_clamp(const flip_geom *g, float x[3], float margin)
{
    unsigned hit = 0;
    for (int k = 0; k < g->dim; k++) {
        const float lo = g->lo[k] + margin, hi = g->hi[k] - margin;
        if (x[k] < lo) {
            x[k] = lo;
            hit |= 1u << (2 * k);
        } else if (x[k] > hi) {
            x[k] = hi;
            hit |= 1u << (2 * k + 1);
        }
    }
    return hit;
}
void flip_ftab_init(flip_state *s, int dim);
float flip_ftab(const flip_state *s, float sdist); /* sdist = phi / radius */

/* ---- obstacles.c ------------------------------------------------------------- */

/* Place the obstacles registered this step at time t; returns the count
 * (0 when no obstacle stage ran this step). */
int flip_obstacles_pose(flip_state *s, double t, int dim, flip_posed *out, int max);
float flip_sdf(const flip_posed *ob, int nob, int dim, const float x[3], int *which);
/* Velocity of obstacle ob at the world point x. */
void flip_obstacle_velocity(const flip_posed *ob, const float x[3], float v[3]);
/* Push x out of every obstacle (phi >= margin); fix the velocity v (may be
 * NULL) so that it does not move into the obstacle. Returns 1 if moved. */
int flip_project(const flip_posed *ob, int nob, int dim, float margin, float x[3], float *v);
/* Rebuild the phi grid and the obstacle density (rho0 F(phi / r)) plus the
 * ground density, when they changed; t: the time of the step. */
int flip_obstacle_grids(floe_ctx *ctx, flip_state *s, double t, float rho0, float obstacle_scale);
/* The static part of those grids (phi_static, rho_ground, flip.ground),
 * rebuilt when a parameter changed (*changed); *moving: an obstacle moves. */
int flip_obstacle_static(floe_ctx *ctx, flip_state *s, double t, float rho0, float obstacle_scale, int *changed,
                         int *moving);
int flip_obstacle_moves(const flip_obstacle *o);
int flip_obstacles_active(const flip_state *s, uint64_t step);
int flip_ground_active(const flip_state *s, uint64_t step);

int flip_st_obstacle(const floe_stage_call *call);
int flip_st_ground(const floe_stage_call *call);
int flip_st_splat(const floe_stage_call *call);
int flip_st_grid(const floe_stage_call *call);
int flip_st_advect(const floe_stage_call *call);

/* flip_cl.c: the OpenCL path */
int flip_cl_splat(const floe_stage_call *call);
int flip_cl_grid(const floe_stage_call *call);
int flip_cl_advect(const floe_stage_call *call);
void flip_cl_release(flip_state *s);

/* Fluid sets of the context (at most FLIP_MAX_SETS). */
typedef struct flip_fluid {
    floe_set set;
    floe_set_info info;
} flip_fluid;
int flip_list_fluids(floe_ctx *ctx, flip_fluid *f, int *nf);

/* parameter indices, in descriptor order (flip.c) */
enum { SP_CELL, SP_RADIUS, SP_DEVICE };
enum { GP_STIFFNESS, GP_SPEED, GP_GAMMA, GP_EOS, GP_REST_DENSITY, GP_COURANT, GP_WALL_FRICTION, GP_OBSTACLE, GP_VISCOSITY,
       GP_HOST_FPS };
enum { AD_PIC, AD_MARGIN, AD_SAMPLING, AD_PIC_INTERVAL };
enum { OP_SHAPE, OP_CENTRE, OP_RADIUS, OP_SIZE, OP_AXIS, OP_NORMAL, OP_BALLS, OP_BLEND, OP_VELOCITY, OP_SPIN,
       OP_PATH, OP_LOOP };
enum { GR_DEPTH, GR_BASE, GR_SLOPE, GR_BUMPS };

#endif
