/* floe view: the viridis colour map (perceptually uniform; van der Walt and
 * Smith's matplotlib map), as the degree-6 polynomial fit of its 256 entries
 * that the particle shader uses too, so the legend and the particles agree. */
#include "vw.h"

static const float C[7][3] = {
    {0.2777273272234177f, 0.005407344544966578f, 0.3340998053353061f},
    {0.1050930431085774f, 1.404613529898575f, 1.384590162594685f},
    {-0.3308618287255563f, 0.214847559468213f, 0.09509516302823659f},
    {-4.634230498983486f, -5.799100973351585f, -19.33244095627987f},
    {6.228269936347081f, 14.17993336680509f, 56.69055260068105f},
    {4.776384997670288f, -13.74514537774601f, -65.35303263337234f},
    {-5.435455855934631f, 4.645852612178535f, 26.3124352495832f},
};

void vw_viridis(float t, float rgb[3])
{
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    for (int k = 0; k < 3; k++) {
        float v = C[6][k];
        for (int i = 5; i >= 0; i--)
            v = v * t + C[i][k];
        rgb[k] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
}

const char vw_viridis_glsl[] =
    "vec3 viridis(float t) {\n"
    "  t = clamp(t, 0.0, 1.0);\n"
    "  const vec3 c0 = vec3(0.2777273272234177, 0.005407344544966578, 0.3340998053353061);\n"
    "  const vec3 c1 = vec3(0.1050930431085774, 1.404613529898575, 1.384590162594685);\n"
    "  const vec3 c2 = vec3(-0.3308618287255563, 0.214847559468213, 0.09509516302823659);\n"
    "  const vec3 c3 = vec3(-4.634230498983486, -5.799100973351585, -19.33244095627987);\n"
    "  const vec3 c4 = vec3(6.228269936347081, 14.17993336680509, 56.69055260068105);\n"
    "  const vec3 c5 = vec3(4.776384997670288, -13.74514537774601, -65.35303263337234);\n"
    "  const vec3 c6 = vec3(-5.435455855934631, 4.645852612178535, 26.3124352495832);\n"
    "  return clamp(c0 + t * (c1 + t * (c2 + t * (c3 + t * (c4 + t * (c5 + t * c6))))), 0.0, 1.0);\n"
    "}\n";
