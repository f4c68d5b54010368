-- delayq: fire occurrences of one recurring schedule: offer each as an ordinary Redisson entry
-- due at the occurrence's time, and advance the schedule, only if the schedule still stands at
-- the occurrence the caller read (compare-and-set on its revision and next occurrence), so that
-- however many processes fire the same schedule, each occurrence is offered once.
-- Not in Redisson (the entries it writes are Redisson's own: Java consumers and schedulers see
-- an ordinary offer).
--
-- Helpers: guard, entry, queue
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: schedules          delayq_schedules:{NAME}
-- KEYS[6]: schedule           delayq_schedule:{NAME}:ID
-- ARGV[1]: now (not used: the occurrences' times are the due times)
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: the schedule's id (its member in KEYS[5])
-- ARGV[4]: the revision the caller read
-- ARGV[5]: the next occurrence the caller read, epoch ms
-- ARGV[6]: the next occurrence after these, epoch ms, or '' when the schedule has ended
-- ARGV[7 + 2k]: an occurrence to offer, epoch ms (ascending)
-- ARGV[8 + 2k]: its random entry id
-- Returns: the number of entries offered, or -1, touching nothing, when the schedule is gone,
-- paused, changed or already past that occurrence (another process fired it).
local stored = redis.call('hmget', KEYS[6], 'rev', 'next_ms', 'paused', 'value')
if stored[1] ~= ARGV[4] or stored[2] ~= ARGV[5] or stored[3] == '1' or not stored[4] then
    return -1
end
local legacy = ARGV[2] == '1'
local offered = 0
for i = 7, #ARGV, 2 do
    local entry = delayq_pack(legacy, ARGV[i + 1], stored[4])
    delayq_schedule(KEYS[2], KEYS[3], KEYS[4], ARGV[i], entry)
    redis.call('hset', KEYS[6], 'last_ms', ARGV[i])
    offered = offered + 1
end
if ARGV[6] == '' then
    redis.call('hdel', KEYS[6], 'next_ms')
    redis.call('zadd', KEYS[5], 'inf', ARGV[3])
else
    redis.call('hset', KEYS[6], 'next_ms', ARGV[6])
    redis.call('zadd', KEYS[5], ARGV[6], ARGV[3])
end
return offered
