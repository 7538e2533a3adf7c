-- Rebuilds the windows of a whole grant tree from its call trail, once its version key is gone
-- (Redis restarted without persistence, or lost the tree's keys). Until the version exists again
-- no check can consume, so what the trail held when it was read is exactly what counts.
--
-- KEYS[1]        version key of the tree
-- KEYS[2..n+1]   the window of every grant of the tree
-- ARGV[1]        a fresh random version, stored once the windows are in place
-- then per window: bucketMs, windowMs, k, and k values: call times (exact window, oldest
-- first) or bucket start, count pairs (bucketed window)
--
-- Replies: {'restored', version} | {'stale', version} (another replica restored it first)

local current = redis.call('GET', KEYS[1])
if current then
  return {'stale', current}
end

local p = 2
for i = 2, #KEYS do
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
