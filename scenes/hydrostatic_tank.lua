-- Hydrostatic tank: a water column at rest settles; pressure must follow
-- rho g h. on_frame reports the bottom pressure against rho g H.
--
--   floe run scenes/hydrostatic_tank.lua [--set dim=2] [--set spacing=0.01]
local floe = require "floe"

local dim = floe.param("dim", 2)
local d = floe.param("spacing", dim == 2 and 0.01 or 0.02)
local H, W = 0.5, 0.4
local g = 9.81

local function v(x, y, z) if dim == 2 then return { x, y } end return { x, y, z } end
local sim = floe.sim{ dim = dim, spacing = d, gravity = v(0, -g, 0),
                      domain = { min = v(-0.1, -0.1, -0.1), max = v(W + 0.1, 1.0, W + 0.1) } }
sim:load{ "sph", "wcsph", "hello" }
sim:fluid_box{ min = v(0, 0, 0), max = v(W, H, W) }
sim:boundary_box{ min = v(0, 0, 0), max = v(W, H + 0.1, W), layers = 2 }

sim:pipeline{
  "neighbours", "sph.density",
  { "wcsph.pressure", speed_of_sound = 30 },
  "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = 0.05 },
  "wcsph.pressure_force",
  { "hello.damp", rate = 4 },
  "integrate",
}
sim:on_frame(function(s, st)
  floe.log(string.format("max speed %.4f m/s, kinetic %.4g J", st.max_speed, st.kinetic))
  local pmax = 0
  for i = 1, s:count "fluid" do
    local p = s:get("fluid", "p", i)
    if p > pmax then pmax = p end
  end
  pmax = s:reduce("max", pmax) -- under MPI: over every rank's particles
  floe.log(string.format("t = %.2f s  bottom p = %.0f Pa  (rho g H = %.0f Pa)  density error %.3f%%",
                         st.time, pmax, 1000 * g * H, 100 * st.density_err_avg))
end)
sim:run{ end_time = 1.5, fps = 10, out = "out/hydrostatic_tank" }
