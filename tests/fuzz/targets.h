/* Fuzz targets: each feeds one input to an entry point that reads
 * untrusted text and returns 0 when it was accepted, -1 when it was
 * refused with a message (in fuzz_message), so a caller can check both.
 * Built with libFuzzer by `make fuzz` (main.c) and run over the corpus and
 * every crash found by the suite (tests/test_fuzz.c). */
#ifndef FLOE_FUZZ_TARGETS_H
#define FLOE_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

/* A YAML preset (yaml_push_file, what floe.preset reads). */
int fuzz_yaml(const uint8_t *data, size_t size);
/* A PLY frame (ply_read_property, for "x" and "v_x"). */
int fuzz_ply(const uint8_t *data, size_t size);
/* --set overrides of a scene: one "key=value" a line, up to 8, read by
 * floe.param and by stage parameters (floe_pipeline_set). */
int fuzz_params(const uint8_t *data, size_t size);

/* A triangle mesh file (floe_mesh_load through assimp, then the topology
 * checks); the first byte picks the extension: obj, stl, ply, dae, off. */
int fuzz_mesh(const uint8_t *data, size_t size);

/* A terrain height map (hm_read_png16: 16-bit greyscale PNG through libpng). */
int fuzz_heightmap(const uint8_t *data, size_t size);

/* Why the last input was refused ("" when it was accepted). */
extern char fuzz_message[8192];

#endif
