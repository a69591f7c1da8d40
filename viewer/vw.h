/* floe view: shared types of the viewer (a program of its own, built only
 * where GLFW 3 and libepoxy are found; docs/viewer.md). */
#ifndef FLOE_VW_H
#define FLOE_VW_H

#include <stddef.h>
#include <stdint.h>

#define VW_MAX_ATTRS 24
#define VW_MAX_CLOUDS 16
#define VW_MAX_MESHES 32
#define VW_NAME 64

/* One particle set at one moment: positions and scalar attributes (a
 * vector attribute v_x, v_y, v_z becomes its length "|v|", named "speed"
 * for v). */
typedef struct vw_cloud {
    char name[VW_NAME];
    int boundary;            /* walls and obstacles: drawn faint or hidden */
    uint32_t n;
    float *x;                /* 3 n */
    int nattr;
    char attr_name[VW_MAX_ATTRS][VW_NAME];
    float *attr[VW_MAX_ATTRS];
} vw_cloud;

/* A triangle mesh (surface, rigid body, terrain, carpet). */
typedef struct vw_mesh {
    char name[VW_NAME];
    uint32_t nv, nt;
    float *pos, *nrm;        /* 3 nv each */
    uint32_t *tri;           /* 3 nt */
} vw_mesh;

typedef struct vw_frame {
    double time;
    float spacing;           /* particle spacing d (0: unknown); spheres of radius d / 2 */
    int dim;
    int nclouds;
    vw_cloud clouds[VW_MAX_CLOUDS];
    int nmeshes;
    vw_mesh meshes[VW_MAX_MESHES];
} vw_frame;

void vw_cloud_free(vw_cloud *c);
void vw_mesh_free(vw_mesh *m);
void vw_frame_free(vw_frame *f);
/* Add scalar attribute `name` (n floats, taken over) to c; the vector
 * components NAME_x/_y/_z are joined into a length by vw_cloud_join. */
int vw_cloud_add_attr(vw_cloud *c, const char *name, float *data);
void vw_cloud_join_vectors(vw_cloud *c);
/* min/max of attribute `name` over the fluid clouds of f; 0 when absent */
int vw_frame_range(const vw_frame *f, const char *name, float *lo, float *hi);
/* bounds of everything in f (boundary too); 0 when empty */
int vw_frame_bounds(const vw_frame *f, float lo[3], float hi[3]);

/* ---- files (ply_mesh.c, obj.c) ----------------------------------------- */

/* A PLY file (binary little-endian or ASCII 1.0): with faces a mesh (*is_mesh
 * 1, into m), else a particle set (into c). Errors name the file. */
int vw_read_ply(const char *path, vw_cloud *c, vw_mesh *m, int *is_mesh, char *err, size_t errlen);
/* A Wavefront OBJ (v, vn, f with any of its index forms; polygons as fans). */
int vw_read_obj(const char *path, vw_mesh *m, char *err, size_t errlen);
/* Vertex normals from the faces (area weighted) where the file had none. */
void vw_mesh_normals(vw_mesh *m);

/* ---- a finished run's folder (rundir.c) -------------------------------- */

typedef struct vw_seq {      /* NAME.NNNN.ply|obj, every file of one name */
    char name[VW_NAME];
    char ext[4];
    int mesh;                /* faces (known after the first file is read) */
    int nfiles;
    int *num;                /* sorted file numbers */
} vw_seq;

typedef struct vw_rundir {
    char path[4096];
    int nseq;
    vw_seq seq[VW_MAX_CLOUDS + VW_MAX_MESHES];
    int nframes;             /* frames of the longest sequence */
    int *frame_num;          /* its file numbers */
    double *time;            /* simulated time of each frame (run.yaml, else number / fps) */
    double *wall;            /* wall seconds of each frame (run.yaml, 0 when absent) */
    double *derr;            /* average density error of each frame (run.yaml) */
    char scene[256], method[128], status[32];
    int dim;
    double spacing;
} vw_rundir;

int vw_rundir_open(vw_rundir *d, const char *path, char *err, size_t errlen);
void vw_rundir_close(vw_rundir *d);
/* Frame k (0..nframes-1): every sequence's file of that number, the static
 * ones (one file) at every frame. */
int vw_rundir_load(vw_rundir *d, int k, vw_frame *f, char *err, size_t errlen);

/* ---- a scene running live (live.c) -------------------------------------- */

typedef struct vw_live vw_live;
typedef struct vw_param {    /* a float, int or bool parameter of a pipeline stage, or a string one with choices */
    char key[160];           /* "wcsph.viscosity.alpha" */
    int type;                /* FLOE_PARAM_* */
    double value, min, max;
    char text[64];           /* a string's value */
    char choices[192];       /* a string's "a|b|c" */
} vw_param;

typedef struct vw_live_opts {
    const char *scene, *out_dir;
    int frames;              /* -1 = scene's */
    int threads, force, quiet;
    const char *const *sets;
    int nsets;
} vw_live_opts;

vw_live *vw_live_start(const vw_live_opts *o);
/* Let the scene compute frames until it has shown `upto` frames (counted
 * over all of its sim:run calls). */
void vw_live_allow(vw_live *lv, long upto);
/* A newer frame than *seen: moved into f (the old one freed), 1; else 0. */
int vw_live_take(vw_live *lv, vw_frame *f, long *seen);
/* Frames shown so far, simulated time, wall seconds spent, last frame's
 * average density error; done: the scene has ended (status in *rc). */
void vw_live_progress(vw_live *lv, long *frames, double *time, double *wall, double *derr, int *done, int *rc);
/* Change a parameter (after the frame being computed; logged in run.yaml). */
void vw_live_set(vw_live *lv, const char *key, const char *value);
int vw_live_params(vw_live *lv, vw_param *out, int max);
void vw_live_restart(vw_live *lv);
void vw_live_stop(vw_live *lv); /* ends the scene and joins its thread, frees lv */
void vw_live_method(vw_live *lv, char *buf, size_t len);  /* module names of its pipeline */
void vw_live_message(vw_live *lv, char *buf, size_t len); /* the scene's error, or "" */

/* ---- pictures (image.c) ------------------------------------------------- */

/* rgb rows top first; .png (libpng) or .ppm by the name's ending */
int vw_write_image(const char *path, const unsigned char *rgb, int w, int h, char *err, size_t errlen);

/* ---- colour (colormap.c) ------------------------------------------------ */

/* viridis at t in [0,1] (clamped) */
void vw_viridis(float t, float rgb[3]);
extern const char vw_viridis_glsl[];

#endif
