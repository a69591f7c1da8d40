-- Ritter's dam break on a dry, flat, frictionless bed (2D), the classic
-- analytic solution of the shallow-water equations: a reservoir of depth
-- h0 released at t = 0 spreads with its front at x = 2 sqrt(g h0) t and,
-- in the rarefaction -sqrt(g h0) t <= x <= 2 sqrt(g h0) t, the depth
--     h(x, t) = (2 sqrt(g h0) - x / t)^2 / (9 g).
-- The bed is a terrain (sim:terrain from a Lua function) with Kipfer's
-- collision, friction and restitution 0; a steep rise of the terrain behind
-- the reservoir is its back wall. The water is WCSPH. Each frame logs the
-- front against 2 sqrt(g h0) t and the depth profile against Ritter's
-- (tests/test_ritter.c checks it within 10% at two times).
--
--   floe run scenes/dam_break_dry_bed.lua [--set spacing=0.004] [--set seconds=0.5]
local floe = require "floe"

local g = 9.81
local h0 = floe.param("h0", 0.1)           -- reservoir depth (m)
local d = floe.param("spacing", 0.005)
local L = floe.param("length", 0.6)        -- reservoir length (m): the back wave reaches
                                           -- x = -sqrt(g h0) t, keep it short of -L
local seconds = floe.param("seconds", 0.5)
local fps = floe.param("fps", 20)
local c0 = math.sqrt(g * h0)
local reach = 2 * c0 * seconds * 1.25 + 0.1 -- the front, and some room

local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, -g }, threads = floe.param("threads", 1),
                      domain = { min = { -L - 0.05, -0.05 }, max = { reach, 3 * h0 } } }
sim:load{ "sph", "wcsph" }
sim:load "terrain"

-- the bed: y = 0 from the back wall on, 2 h0 high behind it
local cell = d / 2
local n = math.floor((reach + L + 0.05) / cell) + 1
sim:terrain{ height = function(x) return x < -L - 0.5 * cell and 2 * h0 or 0 end,
             cell = cell, size = { n, 1 }, origin = { -L - 0.05, 0 } }
sim:fluid_box{ min = { -L, 0 }, max = { 0, h0 }, density = 1000 }

local cs = floe.param("speed_of_sound", 20 * c0)
sim:pipeline{
  "neighbours",
  "sph.density",
  { "wcsph.pressure" },
  "gravity",
  { "wcsph.viscosity", kind = "artificial", alpha = 0.02 },
  "wcsph.pressure_force",
  "integrate",
  { "terrain.collide", friction = 0, wet_friction = 0, restitution = 0 },
}

-- depth by volume: particles in bins of 10 d, each d^2 of water
local function profile(s)
  local bw, bins = 10 * d, {}
  for i = 1, s:count "fluid" do
    local x = s:get("fluid", "x", i)
    local b = math.floor(x / bw)
    bins[b] = (bins[b] or 0) + 1
  end
  return bins, bw
end

sim:on_frame(function(s)
  local t = s.time
  if t <= 0 then return end
  local bins, bw = profile(s)
  local front = -math.huge
  for b, k in pairs(bins) do
    if k * d * d / bw > 0.05 * h0 then front = math.max(front, (b + 1) * bw) end
  end
  local worst = 0
  for x = -0.8 * c0 * t, 1.0 * c0 * t, bw do
    local b = math.floor(x / bw)
    local xm = (b + 0.5) * bw
    local h = (bins[b] or 0) * d * d / bw
    local ritter = (2 * c0 - xm / t) ^ 2 / (9 * g)
    worst = math.max(worst, math.abs(h - ritter) / h0)
  end
  floe.log(string.format("t = %.3f s: front %.3f m (2 sqrt(g h0) t = %.3f, speed %.2f of 2 sqrt(g h0)); "
                         .. "depth within %.1f%% of h0 of Ritter's over -0.8..1.0 sqrt(g h0) t",
                         t, front, 2 * c0 * t, front / (2 * c0 * t), 100 * worst))
end)

sim:run{ end_time = seconds, fps = fps, out = "out/dam_break_dry_bed" }
