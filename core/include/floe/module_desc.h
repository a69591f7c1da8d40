/* Floe: the descriptor half of the module kit, header only (part of the kit
 * for modules, with <floe/module_sets.h> and, for particle modules,
 * <floe/sph.h>, which includes this). Everything is a macro: a module links
 * no core symbol.
 *
 *   FLOE_MODULE_API_DEFINE / _EXTERN  one `api` pointer for all the files of a module
 *   FLOE_MODULE_DESC(name, ...)       the module's descriptor and the entry point that sets `api`
 *   FLOE_MODULE_DESC_API(name, p, ...) the same for a module whose pointer is named p
 *   FLOE_PARAM_F, _I, _B, _S, _V      parameter descriptors (float, int, bool, string, vec3)
 *   FLOE_ATTR, FLOE_ATTR_FLUID, _BOUND attribute descriptors
 *   FLOE_STAGE                        a stage run by st_<id> (and st_<id>_cl) */
#ifndef FLOE_MODULE_DESC_H
#define FLOE_MODULE_DESC_H

#include <floe/module.h>

/* ---- one api pointer per module ---------------------------------------------
 * As SQLite's extension macros do: the file with the entry point writes
 *     FLOE_MODULE_API_DEFINE;          and FLOE_MODULE_DESC(name, ...), which sets it;
 * every other file of the module (its OpenCL path, say) writes
 *     FLOE_MODULE_API_EXTERN;
 * and all of them use `api`. The symbol is hidden: it never leaves the
 * module's shared library. */
#if defined(__GNUC__) && !defined(_WIN32)
#define FLOE_HIDDEN __attribute__((visibility("hidden")))
#else
#define FLOE_HIDDEN
#endif
#define FLOE_MODULE_API_DEFINE FLOE_HIDDEN const floe_api *api = NULL
#define FLOE_MODULE_API_EXTERN extern FLOE_HIDDEN const floe_api *api

/* The descriptor and the entry point of a module, in the file that writes
 * FLOE_MODULE_API_DEFINE:
 *     FLOE_MODULE_DESC(mymod, .version = "1.0.0", .summary = "...", .stages = stages,
 *                      .init = my_init, .fini = my_fini);
 * (any field of floe_module_desc: .save, .load, .lua_open). It writes
 *     static const floe_module_desc ... = { FLOE_SIZED(floe_module_desc),
 *         .abi_major = FLOE_ABI_MAJOR, .abi_minor = FLOE_ABI_MINOR, .name = "mymod", ... };
 *     FLOE_MODULE(mymod) { api = core; return &...; }
 * so the name, the entry point floe_module_mymod and the ABI stamp cannot
 * disagree. FLOE_MODULE_DESC_API(mymod, p, ...) stores the core's table in
 * the pointer p instead of `api`. */
#define FLOE_MODULE_DESC_API(nm, apiptr, ...)                                                                  \
    static const floe_module_desc floe_module_desc_ = {FLOE_SIZED(floe_module_desc), .abi_major = FLOE_ABI_MAJOR, \
                                                       .abi_minor = FLOE_ABI_MINOR, .name = #nm, __VA_ARGS__};     \
    FLOE_MODULE(nm)                                                                                            \
    {                                                                                                          \
        apiptr = core;                                                                                         \
        return &floe_module_desc_;                                                                             \
    }
#define FLOE_MODULE_DESC(nm, ...) FLOE_MODULE_DESC_API(nm, api, __VA_ARGS__)
/* the name the SPH modules first used */
#define FLOE_SPH_MODULE(nm, ...) FLOE_MODULE_DESC_API(nm, api, __VA_ARGS__)

/* ---- parameters -----------------------------------------------------------------
 * One line per parameter, in the enum's order ([P_X] = FLOE_PARAM_F(...)):
 * name, default, range (lo == hi: none), SI unit ("" dimensionless), doc. */
#define FLOE_PARAM_F(nm, d, lo, hi, u, txt)                                                                   \
    {                                                                                                         \
        FLOE_SIZED(floe_param_desc), .name = nm, .type = FLOE_PARAM_FLOAT, .def = d, .min = lo, .max = hi, \
            .unit = u, .doc = txt                                                                             \
    }
#define FLOE_PARAM_I(nm, d, lo, hi, u, txt)                                                                 \
    {                                                                                                       \
        FLOE_SIZED(floe_param_desc), .name = nm, .type = FLOE_PARAM_INT, .def = d, .min = lo, .max = hi, \
            .unit = u, .doc = txt                                                                           \
    }
#define FLOE_PARAM_B(nm, d, txt) \
    { FLOE_SIZED(floe_param_desc), .name = nm, .type = FLOE_PARAM_BOOL, .def = d, .unit = "", .doc = txt }
/* a string, one of `ch` ("a|b|c"; NULL: any) */
#define FLOE_PARAM_S(nm, d, ch, txt)                                                                         \
    {                                                                                                        \
        FLOE_SIZED(floe_param_desc), .name = nm, .type = FLOE_PARAM_STRING, .def_str = d, .choices = ch, \
            .unit = "", .doc = txt                                                                           \
    }
#define FLOE_PARAM_V(nm, x, y, z, u, txt)                                                                        \
    {                                                                                                            \
        FLOE_SIZED(floe_param_desc), .name = nm, .type = FLOE_PARAM_VEC3, .def_vec = {x, y, z}, .unit = u, \
            .doc = txt                                                                                           \
    }

/* ---- attributes ------------------------------------------------------------------ */

/* an attribute of every set of kind k */
#define FLOE_ATTR(k, n, t, acc) { FLOE_SIZED(floe_attr_desc), .kind = k, .name = n, .type = t, .access = acc }
/* an attribute of every fluid set, and one every boundary set offers (read) */
#define FLOE_ATTR_FLUID(n, t, acc) FLOE_ATTR(FLOE_SET_FLUID, n, t, acc)
#define FLOE_ATTR_BOUND(n, t) FLOE_ATTR(FLOE_SET_BOUNDARY, n, t, FLOE_READ)

/* ---- stages ---------------------------------------------------------------------- */

/* a stage named nm, run by st_<id> and st_<id>_cl, with <id>_params and <id>_attrs */
#define FLOE_STAGE(id, nm, text)                                                                         \
    {                                                                                                    \
        FLOE_SIZED(floe_stage_desc), .name = nm, .doc = text, .run = st_##id, .run_cl = st_##id##_cl, \
            .params = id##_params, .attrs = id##_attrs                                                   \
    }
/* the same for a stage that cannot run on a part of the particles under MPI
 * (floe_stage_desc.serial, ABI 1.13: refused there, naming it) */
#define FLOE_STAGE_SERIAL(id, nm, text)                                                                  \
    {                                                                                                    \
        FLOE_SIZED(floe_stage_desc), .name = nm, .doc = text, .run = st_##id, .run_cl = st_##id##_cl, \
            .params = id##_params, .attrs = id##_attrs, .serial = 1                                      \
    }

#endif
