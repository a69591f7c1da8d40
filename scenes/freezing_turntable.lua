-- Kim 2020 Figure 9 on a turntable: the liquid sphere of freezing_bunny.lua
-- dropped on a cold Stanford bunny that turns about the vertical at
-- 45 deg/s (a kinematic body of the rigid module). The glaze and icicles
-- that grow on it turn with it (freeze.carry, docs/freezing.md "Ice on
-- moving bodies"); the body's motion is prescribed, so the ice's mass does
-- not slow it.
--
--   floe run scenes/freezing_turntable.lua [--set spacing=0.0085] [--set seconds=4] [--set turn=45]
--
-- Writes water.NNNN.ply, ice.NNNN.ply (id, m, ice_kind, ice_dir, ice_time,
-- ice_body, ice_r0), bunny.NNNN.obj and bodies.csv (the rigid module's),
-- ice_surface.NNNN.obj and picture.NNNN.png.
-- The mesh comes from FLOE_MODEL_DIR, by default ../shared/data/models.
local floe = require "floe"
local freezing = require "floe.freezing"

local water = floe.preset "water"
local d = floe.param("spacing", 0.0085)
local seconds = floe.param("seconds", 4.0)
local turn = floe.param("turn", 45) -- deg/s
local models = os.getenv("FLOE_MODEL_DIR") or "../shared/data/models"

local sim = floe.sim{
  dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.35, -0.1, -0.35 }, max = { 0.35, 1.0, 0.35 } },
}
sim:load{ "sph", "iisph", "viscosity", "tension", "freeze", "surface" }
local rigid = sim:load "rigid"

-- the bunny 0.3 m tall, its base on the floor, turning about the vertical
-- through its centre of mass
local file = models .. "/bunny_10k.obj"
local raw = floe.mesh_info{ file = file }
local s = 0.3 / (raw.max[2] - raw.min[2])
local centre = { 0, 0.15, 0 }
local bunny = rigid.body{
  name = "bunny", file = file, scale = s, density = 900, position = centre,
  kinematic = function(t) return { position = centre, rotation = { 0, turn * t, 0 } } end,
}
sim:boundary_box{ min = { -0.3, -0.02, -0.3 }, max = { 0.3, 0.95, 0.3 }, layers = 2, set = "tank" }
sim:boundary_set{ name = "ice" }
local n = sim:fluid_sphere{ centre = { 0, 0.55, 0 }, radius = floe.param("radius", 0.2), density = water.density }
floe.log(string.format("freezing turntable: %d water particles, %d on the bunny, spacing %.4g m", n,
                       bunny:state().particles, d))

sim:pipeline(freezing.pipeline{ cold = "bodies", after_integrate = { "rigid.step", "rigid.output" },
                                carry = "bodies", surface = floe.param("surface", true),
                                picture = floe.param("pictures", true) and { eye = { 0.75, 0.55, 0.75 },
                                  target = { 0, 0.15, 0 }, solids = "bodies" } })
sim:on_frame(freezing.report)
local attributes = { "ice_body", "ice_r0" }
for _, a in ipairs(freezing.attributes) do attributes[#attributes + 1] = a end
sim:run{
  end_time = seconds, fps = 30, dt_max = floe.param("dt", 0.006), cfl = floe.param("cfl", 0.4),
  out = "out/freezing_turntable", name = "water",
  formats = { "ply" }, attributes = attributes,
}
