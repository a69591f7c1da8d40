-- A dam break hitting floating objects, after SPlisHSPlasH's
-- DamBreakWithObjects: boxes, a sphere and the Stanford bunny (the Utah
-- teapot of assimp-testmodels has holes at the lid and spout, and a body
-- needs a closed surface: rigid.body refuses it, docs/rigid.md).
--
--   floe run scenes/dam_break_with_objects.lua [--set spacing=0.025] [--set bodies=10]
--   floe bench scenes/dam_break_with_objects.lua --threads 2
local floe = require "floe"

local d = floe.param("spacing", 0.025)
local seconds = floe.param("seconds", 3)
local nbox = floe.param("bodies", 10) - 2
local models = os.getenv("FLOE_MODEL_DIR") or "../shared/data/models"
local tank = { 1.6, 0.9, 0.6 }
local sim = floe.sim{ dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { tank[1] + 0.1, 2.0, tank[3] + 0.1 } } }
sim:load{ "sph", "wcsph" }
local rigid = sim:load "rigid"

sim:fluid_box{ min = { 0, 0, 0 }, max = { 0.4, 0.8, tank[3] }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = tank, layers = 2, open_top = true }
rigid.walls{ min = { 0, 0, 0 }, max = tank, open_top = true }

-- boxes in rows of four across the tank on the floor ahead of the water
local s = math.max(0.08, 3 * d)
for k = 1, nbox do
  local i, j = (k - 1) % 4, (k - 1) // 4
  rigid.body{ name = string.format("box%d", k), shape = "box", size = { s, s, s }, density = 400 + 50 * (k % 5),
              position = { 0.65 + 0.2 * j, s / 2 + 0.005, 0.09 + 0.14 * i } }
end
rigid.body{ name = "ball", shape = "sphere", radius = math.max(0.06, 2 * d), density = 600, position = { 1.35, 0.1, 0.45 } }
local raw = floe.mesh_info{ file = models .. "/bunny_10k.obj" }
local sc = 0.2 / (raw.max[2] - raw.min[2])
rigid.body{ name = "bunny", file = models .. "/bunny_10k.obj", scale = sc, density = 500,
            position = { 1.3, 0.2, 0.15 } }

sim:pipeline{
  "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = 25 }, "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = 0.02 },
  { "rigid.viscosity", alpha = 0.02, speed_of_sound = 25 },
  "wcsph.pressure_force", "rigid.force", "integrate", "rigid.step", "rigid.output",
}
sim:run{ end_time = seconds, fps = 30, out = "out/dam_break_with_objects", name = "water" }
