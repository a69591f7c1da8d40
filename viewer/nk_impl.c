/* floe view: the one place Nuklear and its GLFW back end are compiled. */
#define NK_IMPLEMENTATION
#define NK_GLFW_GL3_IMPLEMENTATION
#include "nk.h"
