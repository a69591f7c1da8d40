-- Validation: a 2D tank of water at rest (0.2 m wide, 0.3 m deep) settles,
-- then is measured: the floor's force against the water's weight (probe
-- "floor", the wall pressure each solver assumes), the water height at three
-- gauges against the fill height (probe "gauges"), pressure at six points
-- (probe "pressure"). `floe validate` runs it with each solver.
--
--   floe run scenes/validation/hydrostatic_2d.lua --set solver=wcsph|iisph|dfsph [--set spacing=0.01]
local floe = require "floe"

local solver = floe.param("solver", "dfsph")
local d = floe.param("spacing", 0.01)
local settle = floe.param("settle", 1.5)
local measure = floe.param("measure", 1.0)
local W, H, g = 0.2, 0.3, 9.81

local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -g },
                      domain = { min = { -4 * d, -4 * d }, max = { W + 4 * d, 2 * H } } }
sim:load{ "sph", "wcsph", "iisph", "dfsph", "hello" }
sim:fluid_box{ min = { 0, 0 }, max = { W, H }, density = 1000 }
sim:boundary_box{ min = { 0, 0 }, max = { W, H + 0.1 }, layers = 2 }

local c = 30
local steps = {
  wcsph = function(damp)
    local p = { "sph.density", { "wcsph.pressure", speed_of_sound = c }, "gravity",
                { "wcsph.viscosity", kind = "artificial", alpha = 0.05 }, "wcsph.pressure_force" }
    if damp then p[#p + 1] = { "hello.damp", rate = 30 } end
    return p
  end,
  iisph = function(damp)
    return { "sph.density", "gravity", { "iisph.solve", damping = damp and 20 or 0 } }
  end,
  dfsph = function(damp)
    local p = { "sph.density", "gravity", "dfsph.solve" }
    if damp then p[#p + 1] = { "hello.damp", rate = 20 } end
    return p
  end,
}
local walls = { wcsph = "mirror", iisph = "extrapolate", dfsph = "akinci" }
if not steps[solver] then error(string.format("solver '%s': expected wcsph, iisph or dfsph", solver)) end
local function pipeline(damp)
  local p = { "neighbours" }
  for _, s in ipairs(steps[solver](damp)) do p[#p + 1] = s end
  p[#p + 1] = "integrate"
  return p
end

sim:pipeline(pipeline(true))
sim:run{ end_time = settle, fps = 10, out = "out/hydrostatic_2d/settle", formats = { "ply" } }

local pts = {}
for k = 1, 6 do pts[k] = { W / 2, 0.02 + 0.04 * k } end
sim:probe{ name = "floor", kind = "force", set = "boundary", wall = walls[solver], scale = 1 / (1000 * g * W * H),
           rate = 1000 }
sim:probe{ name = "gauges", kind = "height", points = { { 0.05, 0 }, { W / 2, 0 }, { 0.15, 0 } } }
sim:probe{ name = "pressure", points = pts, attributes = { "p" }, rate = 1000 }
sim:pipeline(pipeline(false))
sim:run{ end_time = measure, fps = 20, out = "out/hydrostatic_2d", formats = { "ply" } }
