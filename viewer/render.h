/* floe view: drawing with OpenGL 4.3 core (render.c). */
#ifndef FLOE_VW_RENDER_H
#define FLOE_VW_RENDER_H

#include "vw.h"

#include <epoxy/gl.h>

typedef struct vw_camera {
    float target[3];
    float dist, yaw, pitch;  /* radians */
    float fov;               /* vertical, radians */
} vw_camera;

enum { VW_WALLS_HIDDEN = 0, VW_WALLS_FAINT = 1, VW_WALLS_SHOWN = 2 };

typedef struct vw_draw_opts {
    const char *attr;        /* colour by this attribute (NULL: one colour) */
    float lo, hi;            /* its range: lo -> viridis(0), hi -> viridis(1) */
    int walls;               /* VW_WALLS_* */
    int particles, meshes;   /* draw them */
    float radius;            /* sphere radius (0: spacing / 2 of the frame) */
} vw_draw_opts;

typedef struct vw_gpu_cloud {
    GLuint pos, val;
    uint32_t n;
    int boundary, has_val;
} vw_gpu_cloud;

typedef struct vw_gpu_mesh {
    GLuint vao, vbo, ebo;
    uint32_t nt;
    float color[3];
} vw_gpu_mesh;

typedef struct vw_gpu_frame {
    int nclouds, nmeshes;
    vw_gpu_cloud c[VW_MAX_CLOUDS];
    vw_gpu_mesh m[VW_MAX_MESHES];
    float spacing;
} vw_gpu_frame;

typedef struct vw_renderer {
    GLuint particles, mesh, vao;
} vw_renderer;

extern const float vw_background[3];

int vw_render_init(vw_renderer *r, char *err, size_t errlen);
void vw_render_free(vw_renderer *r);
/* Copy f to the GPU (positions and the attribute `attr` of every set, meshes). */
void vw_gpu_upload(vw_gpu_frame *g, const vw_frame *f, const char *attr);
void vw_gpu_free(vw_gpu_frame *g);
/* the camera's matrices (column-major) for a viewport of that aspect */
void vw_camera_matrices(const vw_camera *c, float aspect, float view[16], float proj[16]);
/* A camera that frames the box [lo, hi] in a pane of that aspect (width /
 * height): from the front (+z) in 2D, from the front, a little to the right
 * and above in 3D. */
void vw_camera_frame(vw_camera *c, const float lo[3], const float hi[3], int dim, float aspect);
/* Draw g into the viewport (x, y, w, h) of the bound framebuffer (y from the
 * bottom, as OpenGL counts). mvp (may be NULL): proj * view. */
void vw_render_pane(const vw_renderer *r, const vw_gpu_frame *g, const vw_camera *c, int x, int y, int w, int h,
                    const vw_draw_opts *o, float mvp[16]);

#endif
