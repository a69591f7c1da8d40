-- A sphere of water thrown at a wall sticks to it and runs down (the set-up
-- of Kim 2020, Fig. 7/8): WCSPH with Kim's bulk viscosity between fluid
-- particles (eq. 37-39), his boundary viscosity against the wall (eq. 40),
-- and He et al. surface tension with air pressure (eq. 33-36).
--
--   floe run scenes/viscous_drop_on_wall.lua [--set spacing=0.01] [--set seconds=1.5]
--       [--set wall_viscosity=1] [--set tension=he|akinci|none] [--set dim=2] [--set box_height=1.2]
--
-- wall_viscosity is boundary_beta0 of eq. 40: 0 turns the wall viscosity off
-- (Kim's Fig. 8a: the drop splashes and slides off), 1 is eq. 40 as written
-- (Fig. 8b: it clings and runs down). On_frame logs how much water is within
-- two spacings of the wall and how fast it runs down there.
local floe = require "floe"

local water = floe.preset "water"
local dim = floe.param("dim", 3)
local d = floe.param("spacing", 0.0125)
local seconds = floe.param("seconds", 1.5)
local radius = floe.param("radius", 0.08)
local speed = floe.param("speed", 1.5)            -- m/s towards the wall
local beta0 = floe.param("beta0", 0.1)             -- eq. 37 (Kim: 0.1)
local beta1 = floe.param("beta1", 10)              -- eq. 37/40 (Kim: 10 m/s)
local wall_visc = floe.param("wall_viscosity", 1)  -- eq. 40 coefficient
local tension = floe.param("tension", "he")
local kappa = floe.param("kappa", 0.02)            -- eq. 35 (Kim: 0.02)
local p_atm = floe.param("p_atm", 5000)            -- eq. 36 (Kim: 5000 Pa)
local c = floe.param("speed_of_sound", 30)         -- keeps the compression under p_atm below 1%
local box_height = floe.param("box_height", 1.2)   -- raise it for splashy variants (wall_viscosity=0)

local function v(x, y, z) if dim == 2 then return { x, y } end return { x, y, z } end
local depth = 0.3                                   -- z extent of the floor and wall (3D)
local wall_x = 0.5
local sim = floe.sim{
  dim = dim, spacing = d, gravity = v(0, -9.81, 0),
  domain = { min = v(-1.1, -0.1, -0.1), max = v(wall_x + 0.1, box_height + 3, depth + 0.1) },
}
sim:load{ "sph", "wcsph", "viscosity", "tension" }

local zc = depth / 2
local n = sim:fluid_sphere{ centre = v(0.15, 0.45, zc), radius = radius, density = water.density,
                            velocity = v(speed, 0.5, 0) }
-- an open box whose right side (x = wall_x) is the wall the drop hits
sim:boundary_box{ min = v(-1.0, 0, 0), max = v(wall_x, box_height, depth), layers = 3, open_top = true }
floe.log(string.format("viscous drop: %d fluid particles, spacing %.4g m, tension %s, wall viscosity %g",
                       n, d, tension, wall_visc))

local steps = {
  { "neighbours", reorder_every = 10 },
  "sph.density",
  { "wcsph.pressure", speed_of_sound = c },
  "gravity",
  { "viscosity.kim", beta0 = beta0, beta1 = beta1, boundary_beta0 = wall_visc },
}
if tension == "he" then
  steps[#steps + 1] = { "tension.he", kappa = kappa }
  steps[#steps + 1] = { "tension.air_pressure", p_atm = p_atm }
elseif tension == "akinci" then
  steps[#steps + 1] = { "tension.akinci", gamma = 1, beta = 1 }
elseif tension ~= "none" then
  error("tension must be he, akinci or none")
end
steps[#steps + 1] = "wcsph.pressure_force"
steps[#steps + 1] = "integrate"
sim:pipeline(steps)

sim:on_frame(function(s, st)
  local near, vy, xmin = 0, 0, 1e9
  for i = 1, s:count "fluid" do
    local x = s:get("fluid", "x", i)
    if x > wall_x - 2 * d then
      near = near + 1
      local _, uy = s:get("fluid", "v", i)
      vy = vy + uy
    end
    if x < xmin then xmin = x end
  end
  floe.log(string.format("t = %.2f s: %d particles on the wall, running down at %.3f m/s; max speed %.2f m/s",
                         st.time, near, near > 0 and -vy / near or 0, st.max_speed))
end)

sim:run{
  end_time = seconds, fps = floe.param("fps", 30), cfl = 0.4,
  out = "out/viscous_drop_on_wall", name = "water",
  formats = { "ply", "vtk" },
  attributes = tension == "he" and { "v", "rho", "p", "id", "colour_grad2" } or { "v", "rho", "p", "id" },
}
