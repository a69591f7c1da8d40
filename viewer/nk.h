/* floe view: Nuklear (third_party/nuklear, a single-header immediate-mode GUI
 * library in C, with its GLFW + OpenGL 3 back end) as the viewer uses it. */
#ifndef FLOE_VW_NK_H
#define FLOE_VW_NK_H

#define NK_INCLUDE_FIXED_TYPES
#define NK_INCLUDE_STANDARD_IO
#define NK_INCLUDE_STANDARD_VARARGS
#define NK_INCLUDE_DEFAULT_ALLOCATOR
#define NK_INCLUDE_VERTEX_BUFFER_OUTPUT
#define NK_INCLUDE_FONT_BAKING
#define NK_INCLUDE_DEFAULT_FONT
#define NK_KEYSTATE_BASED_INPUT
#define GLFW_INCLUDE_NONE

#include <epoxy/gl.h>
#include <GLFW/glfw3.h>
#include "nuklear.h"
#include "nuklear_glfw_gl3.h"

#endif
