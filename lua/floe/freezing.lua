-- floe.freezing: the step of the freezing scenes (scenes/freezing_*.lua):
-- Kim 2020's Algorithm 1 as a pipeline, a per-frame log line, the frame
-- attributes. Parameters come from floe.param, so every scene takes
--   --set model=kim|thermal --set glaze=30 --set icicle=30 --set alpha=20
--   --set fr=clamped|rescaled|none --set anisotropic=true|false --set tension=true|false
--   --set T_solid=-30 (thermal)
--
--   local freezing = require "floe.freezing"
--   sim:pipeline(freezing.pipeline{ cold = "bunny" })
--   sim:on_frame(freezing.report)
local floe = require "floe"

local M = {}

-- frame attributes: water's, then the ice's (ice_kind 1 glaze, 2 icicle, 3 thermal)
M.attributes = { "v", "id", "m", "ice_kind", "ice_dir", "ice_time", "Gamma", "T" }

-- opts.cold: the cold solid sets (comma-separated); opts.surface: the ice surface
-- mesh; opts.picture: freeze.picture's parameters (a PNG a frame), or nil;
-- opts.after_integrate: stages after integrate (a moving body's "rigid.step");
-- opts.carry: the moving bodies' set ("bodies"): ice grown on them moves with them
function M.pipeline(opts)
  local model = floe.param("model", "kim")
  local steps = {
    "neighbours",
    "sph.density",
    "gravity",
    { "viscosity.kim", beta0 = floe.param("beta0", 0.1), beta1 = floe.param("beta1", 10),
      boundary_beta0 = floe.param("wall_viscosity", 1) },
  }
  if floe.param("tension", true) then
    steps[#steps + 1] = { "tension.he", kappa = floe.param("kappa", 0.02) }
    steps[#steps + 1] = { "tension.air_pressure", p_atm = floe.param("p_atm", 5000) }
  end
  steps[#steps + 1] = { "iisph.solve", omega = floe.param("omega", 0.5) }
  -- the freezing stages before integrate: on OpenCL they use the step's neighbour lists
  if model == "kim" then
    steps[#steps + 1] = { "freeze.film", cold = opts.cold, ice = "ice", alpha = floe.param("alpha", 20) }
    steps[#steps + 1] = { "freeze.direction", anisotropic = floe.param("anisotropic", true) }
    steps[#steps + 1] = { "freeze.transition", glaze = floe.param("glaze", 30), icicle = floe.param("icicle", 60),
                          fr = floe.param("fr", "clamped") }
  elseif model == "thermal" then
    steps[#steps + 1] = { "freeze.thermal", cold = opts.cold, ice = "ice", T_solid = floe.param("T_solid", -30) }
  else
    error("model must be kim or thermal, not " .. tostring(model))
  end
  steps[#steps + 1] = "integrate"
  for _, s in ipairs(opts.after_integrate or {}) do steps[#steps + 1] = s end
  if opts.carry then steps[#steps + 1] = { "freeze.carry", bodies = opts.carry } end
  if opts.surface then
    steps[#steps + 1] = { "surface.anisotropic", sets = "ice", name = "ice_surface", format = "obj" }
  end
  if opts.picture then
    local p = { "freeze.picture" }
    for k, v in pairs(opts.picture) do p[k] = v end
    steps[#steps + 1] = p
  end
  return steps
end

-- one line a frame: water, ice by kind, the lowest ice
function M.report(s, st)
  local ni, kinds, low = s:count "ice", { 0, 0, 0 }, math.huge
  for i = 1, ni do
    local k = s:get("ice", "ice_kind", i)
    if kinds[k] then kinds[k] = kinds[k] + 1 end
    local _, y = s:get("ice", "x", i)
    if y < low then low = y end
  end
  floe.log(string.format("t = %.2f s: %d water, %d ice (%d glaze, %d icicle, %d thermal), lowest ice y = %s",
                         st.time, s:count "fluid", ni, kinds[1], kinds[2], kinds[3],
                         ni > 0 and string.format("%.3f m", low) or "-"))
end

-- The icicle ledge (scenes/icicle_ledge.lua, scenes/freezing_compare.lua,
-- tests/test_freeze.c): a cold solid ledge 0.2 x 0.03 x 0.12 m at y = 0.30 m
-- sticking out of a tank's back wall, a block of water 0.08 x 0.17 x 0.10 m
-- on it pushed towards the edge. opts: spacing, model ("kim" or "thermal"),
-- speed, anisotropic, glaze, icicle, alpha, fr, min_froude, tension, T_solid, latent,
-- surface, pictures. Returns the sim and the ledge's box.
function M.ledge(opts)
  local water = floe.preset "water"
  local d = opts.spacing or 0.01
  local tank = { 0.4, 0.7, 0.12 }  -- closed: no splash leaves it
  local ledge = { min = { 0, 0.30, 0 }, max = { 0.2, 0.33, tank[3] } }
  local sim = floe.sim{
    dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
    domain = { min = { -0.05, -0.05, -0.05 }, max = { tank[1] + 0.05, tank[2] + 0.05, tank[3] + 0.05 } },
  }
  sim:load{ "sph", "iisph", "viscosity", "tension", "freeze", "surface" }
  sim:boundary_solid_box{ min = ledge.min, max = ledge.max, set = "ledge" }
  sim:boundary_box{ min = { 0, 0, 0 }, max = tank, layers = 2 }
  sim:boundary_set{ name = "ice" }
  local n = sim:fluid_box{ min = { 0.0, 0.33, 0.01 }, max = { 0.08, 0.5, tank[3] - 0.01 },
                           density = water.density, velocity = { opts.speed or 0.3, 0, 0 } }
  floe.log(string.format("icicle ledge: %d fluid particles, spacing %.4g m, model %s", n, d, opts.model))
  local steps = {
    "neighbours",
    "sph.density",
    "gravity",
    { "viscosity.kim", beta0 = 0.1, beta1 = 10, boundary_beta0 = 1 },
  }
  if opts.tension ~= false then
    steps[#steps + 1] = { "tension.he", kappa = 0.02 }
    steps[#steps + 1] = { "tension.air_pressure", p_atm = 5000 }
  end
  steps[#steps + 1] = { "iisph.solve", omega = 0.5 }
  -- the freezing stages before integrate (on OpenCL they use the step's neighbour lists)
  if opts.model == "kim" then
    steps[#steps + 1] = { "freeze.film", cold = "ledge", ice = "ice", alpha = opts.alpha or 20 }
    steps[#steps + 1] = { "freeze.direction", anisotropic = opts.anisotropic ~= false }
    steps[#steps + 1] = { "freeze.transition", glaze = opts.glaze or 30, icicle = opts.icicle or 45,
                          fr = opts.fr or "clamped", min_froude = opts.min_froude or 0.5 }
  elseif opts.model == "thermal" then
    steps[#steps + 1] = { "freeze.thermal", cold = "ledge", ice = "ice", T_solid = opts.T_solid or -30,
                          latent = opts.latent or 334000 }
  else
    error("model must be kim or thermal, not " .. tostring(opts.model))
  end
  steps[#steps + 1] = "integrate"
  if opts.surface then
    steps[#steps + 1] = { "surface.anisotropic", sets = "ice", name = "ice_surface", format = "obj" }
  end
  if opts.pictures then
    steps[#steps + 1] = { "freeze.picture", eye = { 0.62, 0.52, 0.45 }, target = { 0.18, 0.3, 0.06 },
                          solids = "ledge" }
  end
  sim:pipeline(steps)
  return sim, ledge
end

-- The ledge's ice now: count, glaze / icicle / thermal, lowest point, the
-- ice beyond the edge x_edge and the mean growth direction's downward
-- share there (ice_dir; 0 for thermal ice, which has none); all_down: the
-- same for all the ice.
function M.ledge_stats(s, x_edge)
  local r = { water = s:count "fluid", ice = s:count "ice", kinds = { 0, 0, 0 }, low = nil, beyond = 0, down = 0 }
  local gx, gy, gz = 0, 0, 0
  local ax, ay, az = 0, 0, 0
  for i = 1, r.ice do
    local x, y = s:get("ice", "x", i)
    local k = s:get("ice", "ice_kind", i)
    local vx, vy, vz = s:get("ice", "ice_dir", i)
    ax, ay, az = ax + vx, ay + vy, az + vz
    if r.kinds[k] then r.kinds[k] = r.kinds[k] + 1 end
    if not r.low or y < r.low then r.low = y end
    if x > x_edge then
      local ux, uy, uz = s:get("ice", "ice_dir", i)
      r.beyond = r.beyond + 1
      gx, gy, gz = gx + ux, gy + uy, gz + uz
    end
  end
  local len = math.sqrt(gx * gx + gy * gy + gz * gz)
  r.down = len > 0 and -gy / len or 0
  local alen = math.sqrt(ax * ax + ay * ay + az * az)
  r.all_down = alen > 0 and -ay / alen or 0   -- all the ice's mean growth direction, its downward share
  return r
end

return M
