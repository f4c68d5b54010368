-- delayq: put dead letters back into the queue with a fresh attempt count.
-- Not in Redisson. Each record is removed by its exact bytes, so concurrent replays never replay
-- one twice.
--
-- KEYS[1]: target list        NAME
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: attempt counters   delayq_attempts:{NAME}
-- KEYS[6]: counters touched   delayq_attempts_seen:{NAME}
-- KEYS[7]: dead letters       delayq_dead:{NAME}
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: delay, ms (0: straight onto the target list)
-- ARGV[4 + 3k]: a dead-letter record, exactly as stored
-- ARGV[5 + 3k]: its value bytes (parsed by the client)
-- ARGV[6 + 3k]: a random entry id for it
-- Returns: the number of records replayed.
local now = delayq_now(ARGV[1])
local legacy = ARGV[2] == '1'
local delay = tonumber(ARGV[3])
local replayed = 0
for i = 4, #ARGV, 3 do
    local record, value, id = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if redis.call('lrem', KEYS[7], 1, record) == 1 then
        redis.call('hdel', KEYS[5], value)
        redis.call('zrem', KEYS[6], value)
        if delay <= 0 then
            redis.call('rpush', KEYS[1], value)
        else
            delayq_schedule(KEYS[2], KEYS[3], KEYS[4], delayq_ms(now + delay), delayq_pack(legacy, id, value))
        end
        replayed = replayed + 1
    end
end
return replayed
