-- delayq: give every pending entry equal to a value a new due time, atomically.
-- The entries keep their bytes and their place in the order list (a Java peer sees the same
-- entries with a new score); an entry already transferred is not pending, so it is not touched.
--
-- KEYS[1]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[2]: order list         redisson_delay_queue:{NAME}
-- KEYS[3]: channel            redisson_delay_queue_channel:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: new delay from now, ms
-- ARGV[3]: '1' when the queue prefers the legacy dLc0 reading of an ambiguous entry
-- ARGV[4]: the codec-encoded value
-- Returns: the number of entries rescheduled (0: the value is not pending).
local due = delayq_ms(delayq_now(ARGV[1]) + tonumber(ARGV[2]))
local prefer_legacy = ARGV[3] == '1'
local changed = 0
local last = nil
for _, entry in ipairs(redis.call('lrange', KEYS[2], 0, -1)) do
    if delayq_value(entry, prefer_legacy) == ARGV[4] and redis.call('zscore', KEYS[1], entry) then
        redis.call('zadd', KEYS[1], 'xx', due, entry)
        changed = changed + 1
        last = entry
    end
end
if last then
    local head = redis.call('zrange', KEYS[1], 0, 0)[1]
    if head and delayq_value(head, prefer_legacy) == ARGV[4] then
        redis.call('publish', KEYS[3], due)
    end
end
return changed
