-- Water running off a cold horizontal ledge freezes to glaze on it and to
-- icicles hanging from its edge (Kim 2020's freezing model, modules/freeze,
-- docs/freezing.md). The ledge sticks out of the tank's back wall; a slab of
-- water on it is pushed towards the edge, runs over it and falls into the
-- tank, which is not cold. Water: IISPH with Kim's viscosity (eqs. 37-40),
-- He tension and air pressure (eqs. 33-36), as in his Algorithm 1.
--
--   floe run scenes/icicle_ledge.lua [--set spacing=0.01] [--set seconds=3]
--       [--set model=kim|thermal] [--set anisotropic=true|false] [--set glaze=30] [--set icicle=45] [--set fr=clamped]
--
-- Writes water.NNNN.ply (the fluid), ice.NNNN.ply (the ice particles: id, m,
-- ice_kind 1 glaze / 2 icicle / 3 thermal, ice_dir, ice_time), ledge.0000.ply,
-- ice_surface.NNNN.obj (the anisotropic ice surface) and picture.NNNN.png.
local floe = require "floe"

local water = floe.preset "water"
local d = floe.param("spacing", 0.01)
local seconds = floe.param("seconds", 1.8)
local model = floe.param("model", "kim")
local aniso = floe.param("anisotropic", true)
local glaze = floe.param("glaze", 30)
local icicle = floe.param("icicle", 45)
local dt = floe.param("dt", 0.002)
local alpha = floe.param("alpha", 20)
local fr = floe.param("fr", "clamped")
local tension = floe.param("tension", true)
local surface = floe.param("surface", true)
local pictures = floe.param("pictures", true)

local tank = { 0.4, 0.5, 0.12 }
local ledge = { min = { 0, 0.30, 0 }, max = { 0.2, 0.33, tank[3] } }
local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.05, -0.05, -0.05 }, max = { tank[1] + 0.05, tank[2] + 0.2, tank[3] + 0.05 } },
}
sim:load{ "iisph", "viscosity", "tension", "freeze", "surface" }

sim:boundary_solid_box{ min = ledge.min, max = ledge.max, set = "ledge" }
sim:boundary_box{ min = { 0, 0, 0 }, max = tank, layers = 2, open_top = true }
sim:boundary_set{ name = "ice" }
local n = sim:fluid_box{ min = { 0.0, 0.33, 0.01 }, max = { 0.08, 0.5, tank[3] - 0.01 },
                         density = water.density, velocity = { floe.param("speed", 0.3), 0, 0 } }
floe.log(string.format("icicle ledge: %d fluid particles, spacing %.4g m, model %s", n, d, model))

local steps = {
  "neighbours",
  "iisph.density",
  "gravity",
  { "viscosity.kim", beta0 = 0.1, beta1 = 10, boundary_beta0 = 1 },
}
if tension then
  steps[#steps + 1] = { "tension.he", kappa = 0.02 }
  steps[#steps + 1] = { "tension.air_pressure", p_atm = 5000 }
end
steps[#steps + 1] = { "iisph.solve", omega = 0.5 }
-- the freezing stages before integrate (on OpenCL they use the step's neighbour lists)
if model == "kim" then
  steps[#steps + 1] = { "freeze.film", cold = "ledge", ice = "ice", alpha = alpha }
  steps[#steps + 1] = { "freeze.direction", anisotropic = aniso }
  steps[#steps + 1] = { "freeze.transition", glaze = glaze, icicle = icicle, fr = fr }
elseif model == "thermal" then
  steps[#steps + 1] = { "freeze.thermal", cold = "ledge", ice = "ice", T_solid = floe.param("T_solid", -30) }
else
  error("model must be kim or thermal")
end
steps[#steps + 1] = "integrate"
if surface then
  steps[#steps + 1] = { "surface.anisotropic", sets = "ice", name = "ice_surface", format = "obj" }
end
if pictures then
  steps[#steps + 1] = { "freeze.picture", eye = { 0.62, 0.52, 0.45 }, target = { 0.18, 0.3, 0.06 }, solids = "ledge" }
end
sim:pipeline(steps)

-- each frame: how much ice, how low it hangs, which way the new icicle ice grew
sim:on_frame(function(s, st)
  local ni, low, dy, dl, nic = s:count "ice", 1e9, 0, 0, 0
  local g, c = 0, 0
  for i = 1, ni do
    local _, y = s:get("ice", "x", i)
    if y < low then low = y end
    local x = s:get("ice", "x", i)
    if x > ledge.max[1] then
      local ux, uy, uz = s:get("ice", "ice_dir", i)
      dy, dl, nic = dy + uy, dl + 1, nic + 1
      g = g + ux; c = c + uz
    end
  end
  local len = math.sqrt((g / math.max(nic, 1))^2 + (dy / math.max(nic, 1))^2 + (c / math.max(nic, 1))^2)
  floe.log(string.format("t = %.2f s: %d water, %d ice (%d beyond the edge), lowest ice at y = %.3f m, their growth down %.2f",
                         st.time, s:count "fluid", ni, nic, ni > 0 and low or 0,
                         nic > 0 and -(dy / nic) / len or 0))
end)

sim:run{
  end_time = seconds, fps = 30, dt = dt,
  out = "out/icicle_ledge", name = "water",
  formats = { "ply" }, attributes = { "v", "id", "m", "ice_kind", "ice_dir", "ice_time", "Gamma", "T" },
}
