/* Reading back the PLY frames libfloe writes (internal: floe surface and the tests). */
#ifndef FLOE_PLY_READ_H
#define FLOE_PLY_READ_H

#include <stdint.h>

/* Read back a PLY written by io_write_ply: fills n and a malloc'd copy of
 * the float data of property `prop` ("x", "v_x", "rho"; int and uint
 * properties are converted). Binary little-endian 1.0 only; elements before
 * "vertex" are skipped. 0, or -1 with errno (EINVAL malformed, ENOENT no
 * such property). */
int ply_read_property(const char *path, const char *prop, uint32_t *n, float **out);

#endif
