-- Kim 2020 Figure 12: a liquid sphere dropped on a cold Utah teapot freezes
-- to glaze on its lid and body and to icicles hanging from its rim and spout
-- (modules/freeze, docs/freezing.md). The water solver and the freezing
-- stages are those of scenes/freezing_bunny.lua (lua/floe/freezing.lua).
--
--   floe run scenes/freezing_teapot.lua [--set spacing=0.0085] [--set seconds=4]
--       [--set model=kim|thermal] [--set glaze=30] [--set icicle=60] [--out DIR]
--
-- The teapot is the first of the three in assimp-testmodels' teapots.DAE
-- (an open mesh: only its surface is sampled, as sim:boundary_mesh does).
-- Writes water.NNNN.ply, ice.NNNN.ply, teapot.0000.ply, ice_surface.NNNN.obj and picture.NNNN.png.
local floe = require "floe"
local freezing = require "floe.freezing"

local water = floe.preset "water"
local d = floe.param("spacing", 0.0085)
local seconds = floe.param("seconds", 4.0)
local file = floe.param("teapot", "/usr/share/assimp/models/Collada/teapots.DAE")

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.35, -0.1, -0.35 }, max = { 0.35, 1.0, 0.35 } },
}
sim:load{ "sph", "iisph", "viscosity", "tension", "freeze", "surface" }

-- the teapot 0.25 m tall, on the floor, centred on the y axis
local raw = floe.mesh_info{ file = file, object = "Teapot01" }
local s = 0.25 / (raw.max[2] - raw.min[2])
local nb = sim:boundary_mesh{
  file = file, object = "Teapot01", scale = s,
  translation = { -s * (raw.min[1] + raw.max[1]) / 2, -s * raw.min[2], -s * (raw.min[3] + raw.max[3]) / 2 },
  set = "teapot",
}
sim:boundary_box{ min = { -0.3, -0.02, -0.3 }, max = { 0.3, 0.95, 0.3 }, layers = 2, set = "tank" }
sim:boundary_set{ name = "ice" }
local n = sim:fluid_sphere{ centre = { 0, 0.5, 0 }, radius = floe.param("radius", 0.2), density = water.density }
floe.log(string.format("freezing teapot: %d water particles, %d on the teapot, spacing %.4g m", n, nb, d))

sim:pipeline(freezing.pipeline{ cold = "teapot", surface = floe.param("surface", true),
                                picture = floe.param("pictures", true) and { eye = { 0.75, 0.55, 0.75 },
                                  target = { 0, 0.15, 0 }, solids = "teapot" } })
sim:on_frame(freezing.report)
sim:run{
  end_time = seconds, fps = 30, dt_max = floe.param("dt", 0.006), cfl = floe.param("cfl", 0.4),
  out = "out/freezing_teapot", name = "water",
  formats = { "ply" }, attributes = freezing.attributes,
}
