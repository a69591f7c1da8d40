/* Floe module "rigid": rigid bodies in SPH fluid (Akinci et al. 2012
 * coupling, Open Dynamics Engine for integration, contacts and joints).
 * docs/rigid.md explains the coupling and the choices; the files:
 *   rigid.c      descriptor, state, the stages' C paths
 *   body.c       shapes: boundary particles (inset d/2), the body's mesh, volumes psi
 *   mass.c       mass, centre and inertia from a closed mesh's volume integrals
 *   couple.c     the fluid's forces on the body particles (the solvers' own formulas)
 *   engine.c     the ODE world: bodies, walls, contacts, joints, kinematic motion
 *   output.c     per frame: each body's mesh (OBJ) and bodies.csv
 *   lua_rigid.c  the scene face: rigid.body{}, rigid.walls{}, rigid.hinge{}, b:state()
 *   rigid_cl.c   the OpenCL path of the coupling (kernels/rigid/rigid.cl)
 *   engine_thread.c  ODE's step on a host thread (OpenCL path) */
#ifndef RIGID_H
#define RIGID_H

#include <floe/sph.h>

#include <ode/ode.h>

#include <stddef.h>
#include <stdint.h>

FLOE_MODULE_API_EXTERN;

#define RIGID_SET "bodies"      /* the boundary set holding every body's particles */
#define RIGID_NAME 64

enum { RIGID_BOX = 1, RIGID_SPHERE, RIGID_MESH };
enum { RIGID_DYNAMIC = 0, RIGID_KINEMATIC, RIGID_FIXED };

typedef struct rigid_body {
    char name[RIGID_NAME];
    int shape, motion;
    int lua_fn;                 /* kinematic: registry reference of the Lua function of time */
    double mass, volume, density;
    double inertia[3][3];       /* about the centre, in the body frame (= the world axes at the start) */
    double half[3], radius;     /* box half extents / sphere radius (the true surface) */
    /* the surface as a mesh in the body frame (centre at the origin) */
    float *mx;
    uint32_t *mtri, nv, nt;
    uint32_t first, count;      /* its particles were appended as [first, first + count) */
    /* ODE */
    dBodyID body;
    dGeomID geom;
    dTriMeshDataID tmd;
    dReal *tm_verts;            /* the trimesh's vertices (ODE keeps the pointer) */
    dTriIndex *tm_idx;
    /* state after the last step (world frame) and this step's fluid force */
    double x[3], q[4], v[3], w[3];
    double F[3], T[3];          /* pressure + viscous force of the fluid, torque about the centre */
    double Fv[3], Tv[3];        /* the viscous part (rigid.viscosity), added into F, T by rigid.force */
    double kin_t;               /* kinematic: time of the last pose */
    double hold;                /* a dynamic body held still until this time (the fluid settles) */
    int held;
    int push;                   /* this step: the fluid's force goes to ODE (rigid_engine_solve) */
    /* particles attached to it (attach.c: ice grown on it): their mass,
     * first and second moments in the body frame; the centre of mass of
     * body + attached particles at att_c (body frame), where ODE has its
     * body; x, v above stay those of the body's own centre */
    double att_m, att_s1[3], att_s2[3][3], att_c[3];
    uint32_t att_n;
    int att_reset;              /* after a checkpoint's load: re-place without exchanging momentum */
} rigid_body;

/* particles of another boundary set that move with a body (attach.c) */
typedef struct rigid_target {
    floe_set set;
    const char *name;
    const float *x, *V;
    const uint32_t *body;       /* the body's index, nb or more: not attached */
} rigid_target;

typedef struct rigid_joint {
    dJointID j;
    int a, b;                   /* bodies (b = -1: the world) */
} rigid_joint;

typedef struct rigid_thread rigid_thread;

typedef struct rigid_state {
    floe_ctx *ctx;
    void *L;                    /* the scene's lua_State (lua_open) */
    floe_set set;               /* RIGID_SET, id 0 until the first body */
    rigid_body *b;
    int nb, cap;
    rigid_joint *j;
    int nj, jcap;
    /* the ODE world */
    dWorldID world;
    dSpaceID space;
    dJointGroupID contacts;
    dGeomID walls[6];
    int nwalls;
    double friction, restitution, contact_erp, contact_cfm;
    int iterations;
    int started;                /* the world has taken the bodies (first rigid.step) */
    double step_dt;             /* the step rigid_engine_collide began */
    /* per-particle partial sums of the coupling: 2 bodies per fluid particle row */
    double *part;               /* 12 doubles a particle: (body a: F, T), (body b: F, T) */
    int32_t *part_id;           /* 2 per particle: the two bodies, -1 none */
    size_t part_cap;
    uint64_t overflow;          /* rows that touched a third body (reported) */
    /* OpenCL path (rigid_cl.c): the centres sent up, the counter's state,
     * the sums' reads in flight (at most one per pass: viscosity, force) */
    float *cl_cen;
    uint32_t cl_cen_cap;
    int cl_over_ready;          /* the device counter of spilled rows is zero */
    int cl_npend;
    struct {
        void *ev;               /* the read's cl_event */
        float *out;             /* pinned: nb x 6 sums, the spill count */
        int viscous;            /* into Fv, Tv (rigid.viscosity) or F, T */
    } cl_pend[2];
    void *cl_pose_ev;           /* the last pose upload's cl_event */
    int cl_step_pending;        /* rigid.step's second half (sums, ODE's step, placing) not yet run */
    int cl_placer;              /* registered with api->set_placer */
    rigid_thread *thread;       /* engine_thread.c: ODE's step off the main thread */
    int cl_threaded;            /* the pending step's second half runs there */
    double cl_wait_ms, cl_ode_ms; /* that half's times (stats are the main thread's) */
    uint32_t cl_spilled;        /* rows spilled in the passes settled since the last stat */
    int ranks;                  /* MPI: ranks running the scene (0: not asked yet; 1: one process) */
    float *cl_out_mem[2], *cl_pose_mem; /* host memory where the runtime gives no pinned memory */
    int visc_ran;               /* rigid.viscosity added friction since the last rigid.force */
    /* bodies.csv, rewritten whole each frame */
    char *csv;
    size_t csv_len, csv_cap;
    int csv_frame;              /* the last frame written */
    /* rigid.attach{}: a boundary set whose particles ride on the bodies */
    char att_set[RIGID_NAME], att_body[RIGID_NAME], att_r0[RIGID_NAME];
    uint32_t *att_idx;          /* per attached particle: its body index (nb: none) */
    size_t att_cap;
} rigid_state;

/* body.c */
int rigid_body_set(rigid_state *s);
int rigid_body_particles(rigid_state *s, rigid_body *b, const float *px, uint32_t n);
int rigid_shape_box(rigid_state *s, rigid_body *b, const double half[3], float **px, uint32_t *n);
int rigid_shape_sphere(rigid_state *s, rigid_body *b, double r, float **px, uint32_t *n);
int rigid_shape_mesh_inset(rigid_state *s, rigid_body *b, float **px, uint32_t *n, struct floe_mesh *m);
int rigid_place_particles(rigid_state *s);
void rigid_quat_rot(const double q[4], double R[3][3]);
void rigid_euler_quat(const double deg[3], double q[4]);

/* mass.c: volume, centre and the second moment about the origin of a closed,
 * outward-oriented triangle mesh (divergence theorem, tetrahedra from the
 * origin); 0, or -1 when the volume is not positive */
int rigid_mesh_moments(const float *x, const uint32_t *tri, uint32_t nt, double *vol, double c[3], double C[3][3]);
/* inertia about the centre from the moments, for a mass spread evenly */
void rigid_inertia(double mass, double vol, const double c[3], const double C[3][3], double I[3][3]);

/* couple.c */
typedef struct rigid_couple {
    int solver;                 /* RIGID_WCSPH or RIGID_IISPH */
    float beta;                 /* iisph: 2 (mirror, extrapolate) or 1 (akinci) */
    int hyd;                    /* iisph extrapolate: the hydrostatic wall term */
    double alpha, c0;           /* > 0: the viscosity (rigid.viscosity's terms) in the same pass */
} rigid_couple;
enum { RIGID_WCSPH = 1, RIGID_IISPH };
int rigid_couple_pressure(rigid_state *s, const rigid_couple *c);
int rigid_couple_viscosity(rigid_state *s, double alpha, double c0);
void rigid_couple_begin(rigid_state *s);

/* the pressure forces of the fluid on the particles of tg (no viscosity) */
int rigid_sums_attached(rigid_state *s, const rigid_couple *c, const rigid_target *tg, double *F, double *T);

/* attach.c: ice (or anything) carried by a body adds its mass, moves the
 * centre of mass and takes the fluid's pressure forces */
int rigid_attach_config(rigid_state *s, const char *set, const char *body, const char *r0);
int rigid_attach_forces(rigid_state *s, const rigid_couple *c);
int rigid_attach_update(rigid_state *s);
void rigid_attach_torque(const rigid_body *b, double T[3]);
void rigid_attach_from_com(rigid_body *b);
void rigid_attach_loaded(rigid_state *s);

/* engine.c */
int rigid_engine_init(rigid_state *s);
void rigid_engine_fini(rigid_state *s);
int rigid_engine_add(rigid_state *s, rigid_body *b, const double x[3], const double q[4], const double v[3],
                     const double w[3]);
int rigid_engine_step(rigid_state *s, double t, double dt);
double rigid_now_ms(void);
/* the same step in two halves: what does not need the fluid's forces
 * (kinematic poses, releases, contacts), then the forces and ODE's step */
int rigid_engine_collide(rigid_state *s, double t, double dt);
void rigid_engine_solve(rigid_state *s);
int rigid_walls(rigid_state *s, const double lo[3], const double hi[3], int open_top);
int rigid_fix(rigid_state *s, int a, int b);
int rigid_hinge(rigid_state *s, int a, int b, const double anchor[3], const double axis[3]);
void rigid_engine_read(rigid_state *s);

/* lua_rigid.c */
int rigid_lua_open(void *state, floe_ctx *ctx, void *L);
int rigid_kinematic_pose(rigid_state *s, rigid_body *b, double t, double x[3], double q[4]);

/* rigid_cl.c */
int rigid_cl_pressure(rigid_state *s, const rigid_couple *c);
int rigid_cl_viscosity(rigid_state *s, double alpha, double c0);
int rigid_cl_place(rigid_state *s);
/* the sums of the passes in flight folded into the bodies' F, T (waits) */
int rigid_cl_settle(rigid_state *s);
/* rigid.step on OpenCL: ODE's collision detection now, the rest (the
 * sums, ODE's step, the particles placed) at rigid_cl_finish, which the
 * next neighbours stage calls (api->set_placer) once the fluid's sort and
 * lists are launched, or anything that reads the bodies first */
int rigid_cl_step(rigid_state *s, double t, double dt);
int rigid_cl_finish(rigid_state *s);
/* the bodies' state current for a reader (Lua, output, checkpoint): the
 * step finished and the sums in flight folded in */
int rigid_cl_current(rigid_state *s);
void rigid_cl_fini(rigid_state *s);

/* engine_thread.c: fn(s) on the module's thread (0), or -1 when no thread
 * can be made (the caller runs it in line); join returns fn's status */
int rigid_thread_submit(rigid_state *s, int (*fn)(rigid_state *));
int rigid_thread_join(rigid_state *s);
void rigid_thread_stop(rigid_state *s);

/* output.c */
int rigid_write_frame(rigid_state *s);


#endif
