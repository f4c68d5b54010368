-- delayq: offer a value unless an equal one is pending, in which case that entry gets the new
-- due time instead (and any further equal entries are removed), atomically. Not in Redisson.
--
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: position index     delayq_index:{NAME} (kept in step; see transfer.lua)
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: delay from now, ms
-- ARGV[4]: random entry id
-- ARGV[5]: the codec-encoded value
-- Returns: the number of pending entries that were equal (0: a new entry was offered).
--
-- Every entry is read before the first write, so a call that runs long on a big list can still
-- be stopped with SCRIPT KILL, having changed nothing.
local due = delayq_ms(delayq_now(ARGV[1]) + tonumber(ARGV[3]))
local legacy = ARGV[2] == '1'
-- Read: the pending entries equal to the value.
local equal = {}
for _, entry in ipairs(redis.call('lrange', KEYS[3], 0, -1)) do
    if delayq_value(entry, legacy) == ARGV[5] then
        equal[#equal + 1] = entry
    end
end
-- Write: the first keeps its place with the new due time, the others leave.
local found = #equal
local kept = equal[1]
for i = 2, found do
    local entry = equal[i]
    redis.call('lrem', KEYS[3], 1, entry)
    redis.call('zrem', KEYS[2], entry)
    redis.call('zrem', KEYS[5], delayq_index_member(entry))
end
if kept then
    redis.call('zadd', KEYS[2], due, kept)
    delayq_publish_if_head(KEYS[2], KEYS[4], kept, due)
else
    delayq_schedule(KEYS[2], KEYS[3], KEYS[4], due, delayq_pack(legacy, ARGV[4], ARGV[5]))
end
return found
