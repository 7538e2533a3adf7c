-- Rebuilds the windows of a whole grant tree from its call trail, once its version key is gone
-- (Redis restarted without persistence, or lost the tree's keys). Until the version exists again
-- no check can consume, so what the trail held when it was read is exactly what counts.
--
-- KEYS[1]        version key of the tree
-- KEYS[2], [3]   the tree's labels and its calls per tool (see sliding-window.lua)
-- KEYS[4..n+3]   the window of every grant of the tree
-- ARGV[1]        a fresh random version, stored once the windows are in place
-- ARGV[2]        '1' when the trail shows allowed calls within a label's life: whatever labels
--                they left are gone, so the tree is labelled `labels_lost` (rules read it as
--                "anything may have been seen": fail safe), unless its labels are still there
-- ARGV[3]        a label's life (ms); ARGV[4] how long the calls per tool live (ms)
-- ARGV[5]        c, then c `<tool>|<bucket start>`, count pairs: the calls per tool from the trail
-- then per window: bucketMs, windowMs, k, and k values: call times (exact window, oldest
-- first) or bucket start, count pairs (bucketed window)
--
-- Replies: {'restored', version} | {'stale', version} (another replica restored it first)

local current = redis.call('GET', KEYS[1])
if current then
  return {'stale', current}
end

if ARGV[2] == '1' and redis.call('EXISTS', KEYS[2]) == 0 then
  local clock = redis.call('TIME')
  local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  redis.call('HSET', KEYS[2], 'labels_lost', now, '_v', '1@' .. now)
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]))
end
local c = tonumber(ARGV[5])
if c > 0 and redis.call('EXISTS', KEYS[3]) == 0 then
  for j = 6, 5 + 2 * c, 2 do redis.call('HSET', KEYS[3], ARGV[j], ARGV[j + 1]) end
  redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[4]))
end

local p = 6 + 2 * c
for i = 4, #KEYS do
  local key = KEYS[i]
  local bucket, window, k = tonumber(ARGV[p]), tonumber(ARGV[p + 1]), tonumber(ARGV[p + 2])
  p = p + 3
  redis.call('DEL', key)
  if bucket == 0 then
    for j = 0, k - 1, 500 do
      redis.call('RPUSH', key, unpack(ARGV, p + j, p + math.min(j + 499, k - 1)))
    end
  elseif k > 0 then
    local n, h = 0, nil
    for j = 0, k - 1, 2 do
      local start, count = tonumber(ARGV[p + j]), tonumber(ARGV[p + j + 1])
      redis.call('HINCRBY', key, start, count)
      n = n + count
      if not h or start < h then h = start end
    end
    redis.call('HSET', key, 'n', n, 'h', h)
  end
  if k > 0 then redis.call('PEXPIRE', key, window + bucket) end
  p = p + k
end
redis.call('SET', KEYS[1], ARGV[1])
return {'restored', ARGV[1]}
