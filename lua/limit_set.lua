-- delayq: store a queue's limits, or clear them, for the workers that enforce them.
-- Not in Redisson. Every key held back is made due at once, so that workers try it under the
-- new limits; when no per-key limits remain, the values held back go to the head of the target
-- list instead (each key's oldest first), since no worker would look for them any more.
--
-- Helpers: time, guard, item
-- KEYS[1]: target list        NAME
-- KEYS[2]: limits             delayq_limits:{NAME}         field -> value
-- KEYS[3]: keys held back     delayq_limit_held:{NAME}     key -> when to try it ms
-- ARGV[1]: now: epoch ms, or 'server' (not used: the server's clock is read)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: 'set' or 'clear'
-- ARGV[4]: '1' when per-key limits remain
-- ARGV[5]: prefix of the lists of values held back (delayq_limit_parked:{NAME}), ':' KEY follows
-- ARGV[6..]: field, value, ... (set)
-- Returns: { whether limits were stored before, values moved back to the target list }
local existed = redis.call('exists', KEYS[2])
redis.call('del', KEYS[2])
if ARGV[3] == 'set' then
    for i = 6, #ARGV, 2 do
        redis.call('hset', KEYS[2], ARGV[i], ARGV[i + 1])
    end
end
local now = math.floor(delayq_server_us() / 1000)
local held = redis.call('zrange', KEYS[3], 0, -1)
local moved = 0
for _, key in ipairs(held) do
    if ARGV[4] == '1' then
        redis.call('zadd', KEYS[3], delayq_ms(now), key)
    else
        local list = delayq_item_list(ARGV[5], KEYS[3], key)
        local values = redis.call('lrange', list, 0, -1)
        for i = #values, 1, -1 do
            redis.call('lpush', KEYS[1], values[i])
        end
        moved = moved + #values
        redis.call('del', list)
    end
end
if ARGV[4] ~= '1' then
    redis.call('del', KEYS[3])
end
return { existed, moved }
