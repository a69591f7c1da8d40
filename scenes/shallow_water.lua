-- Shallow water as a 2D height field (Guay 2013, Fig. 4): the plane of the
-- 2D simulation is the ground plane (x, y), gravity is not a body force in
-- it, and the splatted density is read as water height, h = h0 rho / rho0.
-- With gamma = 1 and k = g h0 the grid pass's pressure becomes
-- P = k (rho + rho_ground) / rho0 = g (h + b): the shallow-water momentum
-- equation u_t = -g grad(h + b), with `flip.ground` supplying the ground
-- height b (a slope and a few bumps, one of them an island). A mound of
-- extra water (a second particle set, offset by half a spacing) collapses
-- into a circular wave. `raycast.render` (mode "height") shades the height
-- field to PNG frames in shallow_water/frames below the output root.
--
--   floe run scenes/shallow_water.lua [--set resolution=200] [--set seconds=6]
local floe = require "floe"

local res = floe.param("resolution", 200) -- particles per side: 40k + the mound, ~42k as Guay's Fig. 4
local seconds = floe.param("seconds", 6.0)
local render = floe.param("render", true)
local g = 9.81
local h0 = 0.05    -- depth (m) that the rest density stands for
local L = 1.0      -- the pool, L x L m
local d = L / res

local sim = floe.sim{ dim = 2, spacing = d, gravity = { 0, 0 }, domain = { min = { 0, 0 }, max = { L, L } } }
sim:load{ "flip", "raycast" }
local n = sim:fluid_box{ min = { 0, 0 }, max = { L, L }, density = 1000 }
-- the mound: a disc of extra water, on the lattice shifted by half a spacing
local cx, cy, r = 0.3 + 0.5 * d, 0.65 + 0.5 * d, 0.12
local m = sim:fluid_sphere{ centre = { cx, cy }, radius = r, density = 1000, set = "mound" }
floe.log(string.format("shallow water: %d + %d particles, spacing %.4g m, depth %.3g m", n, m, d, h0))

local stages = {
  { "flip.ground", depth = h0, base = -0.01, slope = { 0.02, 0 },
    bumps = "0.70 0.35 0.09 0.13; 0.55 0.75 0.03 0.10; 0.85 0.80 0.04 0.12" },
  { "flip.splat", cell = L / 128 },  -- 128^2 cells (Guay: 256^2; finer than the particles it turns grainy)
  { "flip.grid", eos = "guay", gamma = 1, stiffness = g * h0 },
  { "flip.advect", pic = 0.05 },
}
if render then
  stages[#stages + 1] = { "raycast.render", mode = "height", folder = "shallow_water/frames", name = "height",
    fps = 15, width = 512, scale = h0 / 1000, ground = "flip.ground", iso = 100, light = { -0.5, 1.0, 0.6 } }
end
sim:pipeline(stages)
local r = sim:run{ end_time = seconds, fps = 15, out = "out/shallow_water", name = "water", formats = { "ply" },
                   attributes = { "v" } }
floe.log(string.format("%d steps, %.3g particle-steps/s", r.steps, r.particle_steps_per_s))
