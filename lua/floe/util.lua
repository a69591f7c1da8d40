-- floe.util: small pure-Lua helpers for scenes.
--
--   local util = require "floe.util"
--   local min, max = util.box({0.5, 0.5, 0.5}, {1, 1, 1})
--   sim:fluid_box{ min = min, max = max }
local util = {}

-- Linear interpolation: a at t = 0, b at t = 1 (numbers or vectors).
function util.lerp(a, b, t)
  if type(a) == "table" then
    local r = {}
    for k = 1, #a do r[k] = a[k] + (b[k] - a[k]) * t end
    return r
  end
  return a + (b - a) * t
end

-- x limited to [lo, hi].
function util.clamp(x, lo, hi)
  if x < lo then return lo end
  if x > hi then return hi end
  return x
end

-- A box given by its centre and size: returns min, max (2 or 3 entries).
function util.box(center, size)
  assert(#center == #size, "util.box: centre and size need the same number of entries")
  local min, max = {}, {}
  for k = 1, #center do
    assert(size[k] > 0, "util.box: sizes must be positive")
    min[k] = center[k] - 0.5 * size[k]
    max[k] = center[k] + 0.5 * size[k]
  end
  return min, max
end

-- Martin & Moyce (1952) water column of width a and height n2 * a (n2 is
-- their n^2 = height / width), standing in the corner at origin (default
-- the coordinate origin). depth (3D only, default a) is the extent in z.
-- Returns min, max for sim:fluid_box; pass dim = 2 for 2-entry vectors.
function util.column(a, n2, opts)
  opts = opts or {}
  assert(a > 0 and n2 > 0, "util.column: a and n2 must be positive")
  local o = opts.origin or {0, 0, 0}
  if opts.dim == 2 then
    return {o[1], o[2]}, {o[1] + a, o[2] + n2 * a}
  end
  local depth = opts.depth or a
  return {o[1], o[2], o[3]}, {o[1] + a, o[2] + n2 * a, o[3] + depth}
end

-- A copy of defaults with the keys of overrides put over it (one level
-- deep for nested tables, e.g. a preset under scene parameters).
function util.merge(defaults, overrides)
  local r = {}
  for k, v in pairs(defaults) do r[k] = v end
  for k, v in pairs(overrides or {}) do
    if type(v) == "table" and type(r[k]) == "table" and #v == 0 then
      r[k] = util.merge(r[k], v)
    else
      r[k] = v
    end
  end
  return r
end

return util
