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

#endif
