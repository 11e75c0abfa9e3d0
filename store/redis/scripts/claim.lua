#!lua flags=allow-cross-slot-keys
-- Due's claim, on a cluster: of the records the due script listed on this
-- server (without claiming), claim those the merged list kept, unless
-- another instance claimed one meanwhile.
--
-- KEYS: per record, its bucket's claims
-- ARGV: 1 instance, 2 claim (microseconds), then per record its member
--       and its key
-- Reply: {sec, usec, {index (0-based in KEYS), member, fields}...}
local clock = redis.call('TIME')
local sec, usec = tonumber(clock[1]), tonumber(clock[2])
local now = sec * 1000000 + usec
local instance = ARGV[1]
local function int(x) return string.format('%.0f', x) end

local out = {sec, usec}
for i = 1, #KEYS do
  local m, key = ARGV[1 + 2 * i], ARGV[2 + 2 * i]
  local c = redis.call('HGET', KEYS[i], m)
  local owner, untilAt
  if c then owner, untilAt = string.match(c, '^(.*) (%d+)$') end
  if not c or owner == instance or not untilAt or tonumber(untilAt) <= now then
    local rec = redis.call('HGETALL', key)
    if #rec > 0 then
      redis.call('HSET', KEYS[i], m, instance .. ' ' .. int(now + tonumber(ARGV[2])))
      table.insert(out, {i - 1, m, rec})
    end
  end
end
return out
