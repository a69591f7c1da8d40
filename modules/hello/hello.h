/* Floe module "hello": what its two files share (hello.c holds the
 * descriptors, pressure.c the solver stage). */
#ifndef FLOE_HELLO_H
#define FLOE_HELLO_H

#include <floe/module.h>

enum { HELLO_PRESSURE_SPEED }; /* hello.pressure's parameters, in descriptor order */
int hello_pressure(const floe_stage_call *call);

#endif
