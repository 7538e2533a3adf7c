-- Sliding-window call budget over a whole grant chain, decided atomically, and the tree's
-- session (its labels and its calls per tool), read and written in the same script.
--
-- KEYS[1]        version key of the grant tree (cached broker facts are valid only under it)
-- KEYS[2..n+1]   one window per grant of the chain (the grant first, its root last)
-- KEYS[n+2]      the tree's labels: a hash of label -> first seen (ms), and `_v`, their stamp
-- KEYS[n+3]      the tree's calls: a hash of `<tool>|<bucket start>` -> allowed calls
-- ARGV[1]        the version the caller's cached facts were loaded under
-- ARGV[2]        'consume' (policy allowed: take one unit everywhere) or 'probe' (only report)
-- ARGV[3]        '' to use Redis TIME, or a time in ms (tests of the window against a model)
-- ARGV[4]        the labels stamp the decision saw ('*': no decision read them, a budget alone)
-- ARGV[5]        the tool called ('' records no call per tool)
-- ARGV[6]        how long a label lives after it is first seen (ms)
-- ARGV[7]        the bucket length of the calls per tool (ms)
-- ARGV[8]        the most labels a tree holds
-- ARGV[9]        the tool's count the decision read ('' when no rule read it)
-- ARGV[10]       L, the number of labels the call adds; ARGV[11..10+L] the labels
-- then ARGV[b+3i-2], ARGV[b+3i-1], ARGV[b+3i] (b = 10 + L)   calls, windowMs, bucketMs of level i
--
-- A window is exact (bucketMs 0): a list of the allowed calls' times, oldest first, about
-- 11 bytes a call. A large budget is bucketed (bucketMs > 0): a hash of bucket start -> count,
-- at most windowMs / bucketMs + 1 buckets whatever the budget. A bucket counts in full until its end leaves the window, so a
-- bucketed window never admits more than the exact one would; it may admit fewer, for at most
-- one bucket's time. The calls per tool are bucketed the same way over the root's window.
--
-- Replies (S = stamp, labels as label, ms pairs, calls as tool, n pairs: the session after
-- the script, which the caller's next decision of the tree reads):
--          {'missing'}                                no version: rebuild the tree's windows first
--          {'stale', currentVersion, 0, 0, S, ...}    nothing consumed; reload facts and retry
--          {'session', 0, 0, 0, S, ...}               the labels, or the count the decision read,
--                                                     changed since the decision: decide again
--          {'label_limit', 0, 0, 0, S, ...}           the call would pass the labels cap; nothing taken
--          {'allowed', remaining, resetMs, atMs, S, ...}   one unit taken at every level, at atMs
--          {'exhausted', retryAfterMs, resetMs, fullLevels, S, ...}   levels full (0-based); nothing taken
--          {'probed', remaining, resetMs, 0, S, ...}  nothing taken
-- All keys share the root's hash tag, so the script runs on one Redis Cluster slot.

local current = redis.call('GET', KEYS[1])
if not current then
  return {'missing'}
end

local now
if ARGV[3] ~= '' then
  now = tonumber(ARGV[3])
else
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end

local levels = #KEYS - 3
local labels_key, calls_key = KEYS[levels + 2], KEYS[levels + 3]
local label_ttl, call_bucket, label_cap = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local added = tonumber(ARGV[10])
local base = 10 + added
local root_window = tonumber(ARGV[base + 3 * levels - 1])

-- A new stamp for the labels: a count and the time, so labels that expired and came back under the
-- same count still get another stamp.
local function next_stamp(stamp)
  local count = tonumber(string.match(stamp, '^(%d+)@')) or 0
  local fresh = (count + 1) .. '@' .. now
  redis.call('HSET', labels_key, '_v', fresh)
  return fresh
end

-- The tree's labels still alive, as label, first seen pairs; a label past its time goes, and
-- moves the stamp.
local function live_labels()
  local flat = redis.call('HGETALL', labels_key)
  local live, stamp, expired = {}, '0', false
  for j = 1, #flat, 2 do
    if flat[j] == '_v' then
      stamp = flat[j + 1]
    elseif tonumber(flat[j + 1]) + label_ttl <= now then
      redis.call('HDEL', labels_key, flat[j])
      expired = true
    else
      live[#live + 1] = flat[j]
      live[#live + 1] = flat[j + 1]
    end
  end
  if expired then stamp = next_stamp(stamp) end
  return live, stamp
end

-- The tree's allowed calls per tool in the root's window, as tool, n pairs; a bucket whose end
-- left the window goes.
local function tool_calls()
  local flat = redis.call('HGETALL', calls_key)
  local by_tool, order = {}, {}
  for j = 1, #flat, 2 do
    local bar = string.find(flat[j], '|', 1, true)
    local start = tonumber(string.sub(flat[j], bar + 1))
    if start + call_bucket <= now - root_window then
      redis.call('HDEL', calls_key, flat[j])
    else
      local tool = string.sub(flat[j], 1, bar - 1)
      if not by_tool[tool] then order[#order + 1] = tool; by_tool[tool] = 0 end
      by_tool[tool] = by_tool[tool] + tonumber(flat[j + 1])
    end
  end
  local pairs_out = {}
  for _, tool in ipairs(order) do
    pairs_out[#pairs_out + 1] = tool
    pairs_out[#pairs_out + 1] = by_tool[tool]
  end
  return pairs_out
end

local live, stamp = live_labels()

local function reply(kind, a, b, c)
  return {kind, a, b, c, stamp, live, tool_calls()}
end

if current ~= ARGV[1] then
  return reply('stale', current, 0, 0)
end
if ARGV[4] ~= '*' and stamp ~= ARGV[4] then
  return reply('session', 0, 0, 0)
end
-- A rule read this tool's count: the decision holds only on the count the tree has now.
if ARGV[9] ~= '' then
  local counted, flat = 0, tool_calls()
  for j = 1, #flat, 2 do
    if flat[j] == ARGV[5] then counted = flat[j + 1] end
  end
  if counted ~= tonumber(ARGV[9]) then return reply('session', 0, 0, 0) end
end
local consume = ARGV[2] == 'consume'

-- Exact: drops the calls that left the window; answers the count, when the oldest leaves, and
-- when room returns once the window is full (the (count - calls + 1)-th oldest leaves).
local function exact_window(key, calls, window)
  while true do
    local head = redis.call('LINDEX', key, 0)
    if not head or tonumber(head) > now - window then break end
    redis.call('LPOP', key)
  end
  local count = redis.call('LLEN', key)
  local reset, wait = window, 0
  if count > 0 then reset = tonumber(redis.call('LINDEX', key, 0)) + window - now end
  if count >= calls then wait = tonumber(redis.call('LINDEX', key, count - calls)) + window - now end
  return count, reset, wait
end

-- Bucketed: a hash of bucket start -> count, with `n` the total counted and `h` the start of the
-- oldest bucket still counted. Buckets leave from `h` on, one bucket length apart, so a check
-- touches O(1) fields; a window idle for longer than itself is simply dropped.
local function bucketed_window(key, calls, window, bucket)
  local h = tonumber(redis.call('HGET', key, 'h'))
  if h and h + bucket + window <= now then
    if now - (h + bucket + window) >= window + bucket then
      redis.call('DEL', key)
      h = nil
    else
      local n = tonumber(redis.call('HGET', key, 'n')) or 0
      while h + bucket + window <= now do
        n = n - (tonumber(redis.call('HGET', key, h)) or 0)
        redis.call('HDEL', key, h)
        h = h + bucket
      end
      redis.call('HSET', key, 'n', n, 'h', h)
    end
  end
  local count = tonumber(redis.call('HGET', key, 'n')) or 0
  if count <= 0 or not h then return 0, window + bucket, 0 end
  local reset, wait = h + bucket + window - now, 0
  if count >= calls then
    local freed, start = 0, h
    while start <= now do
      freed = freed + (tonumber(redis.call('HGET', key, start)) or 0)
      if count - freed < calls then
        wait = start + bucket + window - now
        break
      end
      start = start + bucket
    end
  end
  return count, reset, wait
end

local remaining, reset_ms, retry_after = nil, 0, 0
local full = {}
for i = 1, levels do
  local key = KEYS[i + 1]
  local calls = tonumber(ARGV[base + 3 * i - 2])
  local window = tonumber(ARGV[base + 3 * i - 1])
  local bucket = tonumber(ARGV[base + 3 * i])
  local count, reset, wait
  if bucket == 0 then
    count, reset, wait = exact_window(key, calls, window)
  else
    count, reset, wait = bucketed_window(key, calls, window, bucket)
  end
  if wait > retry_after then retry_after = wait end
  if wait > 0 then full[#full + 1] = i - 1 end
  local left = calls - count
  if consume then left = left - 1 end
  if left < 0 then left = 0 end
  if remaining == nil or left < remaining then
    remaining = left
    reset_ms = reset
    if consume and count == 0 then reset_ms = window + bucket end
  end
end

if not consume then
  return reply('probed', remaining or 0, reset_ms, 0)
end
if retry_after > 0 then
  return reply('exhausted', retry_after, reset_ms, full)
end

-- The labels this call adds, unless they would take the tree past its cap: then nothing is taken
-- (a label dropped would let through what a rule means to refuse after it).
local new_labels = {}
for j = 11, 10 + added do
  if redis.call('HEXISTS', labels_key, ARGV[j]) == 0 then new_labels[#new_labels + 1] = ARGV[j] end
end
if #new_labels > 0 then
  local held = #live / 2
  if held + #new_labels > label_cap then
    return reply('label_limit', 0, 0, 0)
  end
  for _, label in ipairs(new_labels) do
    redis.call('HSET', labels_key, label, now)
    live[#live + 1] = label
    live[#live + 1] = now
  end
  stamp = next_stamp(stamp)
  redis.call('PEXPIRE', labels_key, label_ttl)
end

if ARGV[5] ~= '' then
  local call_start = now - now % call_bucket
  redis.call('HINCRBY', calls_key, ARGV[5] .. '|' .. call_start, 1)
  redis.call('PEXPIRE', calls_key, root_window + call_bucket)
end

for i = 1, levels do
  local key = KEYS[i + 1]
  local window = tonumber(ARGV[base + 3 * i - 1])
  local bucket = tonumber(ARGV[base + 3 * i])
  if bucket == 0 then
    -- Should the clock step back, a time out of order stays until those before it leave: the
    -- window then counts it longer than needed, never shorter.
    redis.call('RPUSH', key, now)
  else
    local start = now - now % bucket
    redis.call('HINCRBY', key, start, 1)
    redis.call('HINCRBY', key, 'n', 1)
    if not redis.call('HGET', key, 'h') then redis.call('HSET', key, 'h', start) end
  end
  redis.call('PEXPIRE', key, window + bucket)
end
return reply('allowed', remaining, reset_ms, now)
