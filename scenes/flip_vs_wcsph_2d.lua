-- The same 2D set-up with two solvers: the Martin & Moyce (1952) dam break
-- (n^2 = 2, column a x 2a settled behind a gate, then released) run once with
-- the grid-splat PIC/FLIP module `flip` (Guay 2013) and once with `wcsph`
-- (Becker & Teschner 2007, Akinci boundaries), on the same particle lattice,
-- speed of sound and gravity. Prints the surge front Z = z/a of both against
-- the experiment (tests/validation/), and the steps per second of each.
--
--   floe run scenes/flip_vs_wcsph_2d.lua [--set a=0.1] [--set resolution=40]
local floe = require "floe"

local a = floe.param("a", 0.1)
local res = floe.param("resolution", 40)
local d = a / res
local g = 9.81
local c = 20
local scale = math.sqrt(2 * g / a)

-- the experiment, from the validation table
local ref = {}
local csv = "tests/validation/dambreak2d_martin_moyce_n2eq2_a2.25in_table2_front.csv"
local f = io.open(csv, "r")
if f then
  for line in f:lines() do
    local T, Z = line:match("^([%d%.]+),([%d%.]+)")
    if T then ref[#ref + 1] = { tonumber(T), tonumber(Z) } end
  end
  f:close()
end

-- run one solver; returns the front history {T, Z} and the steps per second
local function dam_break(solver)
  local margin = solver == "wcsph" and 4 * d or 0
  local sim <close> = floe.sim{ dim = 2, spacing = d, gravity = { 0, -g },
    domain = { min = { -margin, -margin }, max = { 5 * a + margin, 3 * a + 2 * margin } } }
  sim:load{ "sph", solver, "hello" }
  sim:fluid_box{ min = { 0, 0 }, max = { a, 2 * a }, density = 1000 }
  local function pipeline(settling)
    local p
    if solver == "flip" then
      p = { "flip.splat", { "flip.grid", speed_of_sound = c }, "flip.advect" }
      if settling then
        table.insert(p, 1, { "flip.obstacle", shape = "box", centre = { a + 2 * d, 1.5 * a }, size = { 4 * d, 3 * a } })
      end
    else
      p = { "neighbours", "sph.density", { "wcsph.pressure", speed_of_sound = c }, "gravity",
            { "wcsph.viscosity", kind = "artificial", alpha = 0.02, boundary_alpha = 0.5 },
            "wcsph.pressure_force", "integrate" }
    end
    if settling then table.insert(p, #p + (solver == "flip" and 1 or 0), { "hello.damp", rate = 5 }) end
    return p
  end
  if solver == "wcsph" then
    sim:boundary_box{ min = { 0, 0 }, max = { 5 * a, 3 * a }, layers = 2, open_top = true }
    sim:boundary_solid_box{ min = { a + 0.5 * d, 0 }, max = { a + 2.5 * d, 2.2 * a }, set = "gate" }
  end
  sim:pipeline(pipeline(true))
  sim:run{ end_time = 0.4, fps = 10, progress = false }
  if solver == "wcsph" then sim:remove_set "gate" end
  sim:pipeline(pipeline(false))
  local t0, hist = sim.time, {}
  sim:on_frame(function(s, st)
    local xmax = 0
    for i = 1, s:count "fluid" do
      local x = s:get("fluid", "x", i)
      if x > xmax then xmax = x end
    end
    hist[#hist + 1] = { (st.time - t0) * scale, (xmax + 0.5 * d) / a }
  end)
  local r = sim:run{ end_time = 2.6 / scale, fps = 200, progress = false }
  return hist, r.steps / r.wall_s, r.steps
end

local function at(hist, T)
  if #hist == 0 then return 0 / 0 end -- no frame ran (floe run --frames 0: the checks only)
  for i = 2, #hist do
    if hist[i][1] >= T then
      local w = (T - hist[i - 1][1]) / (hist[i][1] - hist[i - 1][1])
      return hist[i - 1][2] + w * (hist[i][2] - hist[i - 1][2])
    end
  end
  return hist[#hist][2]
end

local hf, sf, nf = dam_break("flip")
local hw, sw, nw = dam_break("wcsph")
floe.log(string.format("flip : %d steps, %.1f steps/s", nf, sf))
floe.log(string.format("wcsph: %d steps, %.1f steps/s", nw, sw))
floe.log("   T    Z_exp   Z_flip  Z_wcsph")
for _, p in ipairs(ref) do
  if p[1] >= 0.5 and p[1] <= 2.5 then
    floe.log(string.format("%5.2f  %5.2f  %6.3f  %6.3f", p[1], p[2], at(hf, p[1]), at(hw, p[1])))
  end
end
