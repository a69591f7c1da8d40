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
-- mesh; opts.picture: freeze.picture's parameters (a PNG a frame), or nil
function M.pipeline(opts)
  local model = floe.param("model", "kim")
  local steps = {
    "neighbours",
    "iisph.density",
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

return M
