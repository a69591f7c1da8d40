/* Shared by the OpenCL test files (test_opencl.c, test_*_cl.c): every
 * device test skips when no OpenCL platform or device is found, so the
 * suite passes on machines without OpenCL. */
#ifndef FLOE_TEST_CL_FIXTURE_H
#define FLOE_TEST_CL_FIXTURE_H

#include <criterion/criterion.h>
#include <floe/floe.h>

/* a floe_cl_devices line sink that ignores the lines */
static inline void count_line(const char *line, void *u)
{
    (void)line;
    (void)u;
}

static inline void need_opencl(void)
{
    if (floe_cl_devices(count_line, NULL) <= 0)
        cr_skip_test("no OpenCL platform or device found");
}

/* The last frame's density error and energies of a run (its on_frame). */
typedef struct cl_summary {
    double err_avg, kinetic, potential;
} cl_summary;

static inline int cl_grab(floe_ctx *ctx, const floe_frame_stats *st, void *u)
{
    (void)ctx;
    cl_summary *s = u;
    s->err_avg = st->density_err_avg;
    s->kinetic = st->kinetic;
    s->potential = st->potential;
    return 0;
}

#endif
