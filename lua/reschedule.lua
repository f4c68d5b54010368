-- delayq: give every pending entry equal to a value a new due time, atomically.
-- Not in Redisson. The entries keep their bytes and their place in the order list (a Java peer
-- sees the same entries with a new score); an entry already transferred is not pending, so it is
-- not touched.
--
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: new delay from now, ms
-- ARGV[4]: the codec-encoded value
-- Returns: the number of entries rescheduled (0: the value is not pending).
--
-- Every entry is read before the first write, so a call that runs long on a big list can still
-- be stopped with SCRIPT KILL, having changed nothing.
local due = delayq_ms(delayq_now(ARGV[1]) + tonumber(ARGV[3]))
local legacy = ARGV[2] == '1'
-- Read: the pending entries equal to the value.
local hits = {}
for _, entry in ipairs(redis.call('lrange', KEYS[3], 0, -1)) do
    if delayq_value(entry, legacy) == ARGV[4] and redis.call('zscore', KEYS[2], entry) then
        hits[#hits + 1] = entry
    end
end
-- Write.
for _, entry in ipairs(hits) do
    redis.call('zadd', KEYS[2], 'xx', due, entry)
end
local changed = #hits
if changed > 0 then
    local head = redis.call('zrange', KEYS[2], 0, 0)[1]
    if head and delayq_value(head, legacy) == ARGV[4] then
        redis.call('publish', KEYS[4], due)
    end
end
return changed
