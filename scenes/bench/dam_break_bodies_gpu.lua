-- A WCSPH dam break of n fluid particles (default 1M) with `bodies` floating
-- boxes (default 100) on a GPU: the rigid coupling on the device (issue 15,
-- at least 500 steps/s on an H200).
--
--   floe bench scenes/bench/dam_break_bodies_gpu.lua --backend opencl [--set n=1M] [--set bodies=100] [--set steps=500]
--       [--set one_pass=0] [--set force_first=0] [--set iterations=N]
local floe = require "floe"

local function count(s)
  s = tostring(s)
  local v, suf = s:match("^([%d%.]+)([kKmM]?)$")
  assert(v, "n must be a number with an optional k or M suffix (got " .. s .. ")")
  local mul = (suf == "k" or suf == "K") and 1e3 or (suf == "m" or suf == "M") and 1e6 or 1
  return tonumber(v) * mul
end

local n_want = count(floe.param("n", "1M"))
local steps = floe.param("steps", 500)
local nbodies = floe.param("bodies", 100)
local side = math.floor(n_want ^ (1 / 3) + 0.5)
local d = 1.0 / side
local dt = 0.02 * d
local sim = floe.sim{ dim = 3, spacing = d, gravity = { 0, -9.81, 0 },
  domain = { min = { -0.1, -0.1, -0.1 }, max = { 4.1, 3.2, 1.6 } } }
sim:load{ "sph", "wcsph" }
local rigid = sim:load "rigid"
local n = sim:fluid_box{ min = { 0, 0, 0 }, max = { 1, 1, 1 }, density = 1000 }
sim:boundary_box{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, layers = 2, open_top = true }
rigid.walls{ min = { 0, 0, 0 }, max = { 4, 3, 1.5 }, open_top = true }
-- ODE's iterations per step (the module's default unless given)
local iterations = floe.param("iterations", 0)
if iterations > 0 then rigid.settings{ iterations = iterations } end
-- 0.1 m boxes in a grid of 10 across and rows along x from 1.3 m
local s = math.max(0.1, 3 * d)
for k = 1, nbodies do
  local i, j = (k - 1) % 10, (k - 1) // 10
  rigid.body{ name = string.format("box%d", k), shape = "box", size = { s, s, s }, density = 500,
              position = { 1.3 + 0.25 * j, s / 2 + 0.001, 0.1 + 0.14 * i } }
end
floe.log(string.format("bench: %d fluid particles, %d bodies (%d body particles), spacing %.5g m, %d steps",
  n, nbodies, nbodies > 0 and sim:count "bodies" or 0, d, steps))
-- one_pass = 1 (default): the fluid-body friction in rigid.force's pass over
-- the rows; 0: the separate rigid.viscosity stage (two passes a step).
-- force_first = 1 (default): rigid.force before wcsph.pressure_force (it
-- reads p, not the pressure force), so on a device the bodies' sums come
-- back while the fluid's pressure force is computed and ODE's step on the
-- host overlaps it; 0: after it.
local pf = { "wcsph.pressure_force", xsph = floe.param("viscosity", 0.01) }
local couple
if floe.param("one_pass", 1) == 1 then
  local rf = { "rigid.force", alpha = 0.02, speed_of_sound = 20 }
  couple = floe.param("force_first", 1) == 1 and { rf, pf } or { pf, rf }
else
  couple = { { "rigid.viscosity", alpha = 0.02, speed_of_sound = 20 }, pf, "rigid.force" }
end
local stages = { "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = 20 }, "gravity" }
for _, st in ipairs(couple) do stages[#stages + 1] = st end
stages[#stages + 1] = "integrate"
stages[#stages + 1] = "rigid.step"
sim:pipeline(stages)
sim:run{ end_time = steps * dt, fps = 1 / (steps * dt), dt = dt, out = "out/bench_dam_break_bodies_gpu" }
