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
--
-- The dead-letter list is read whole before the first write (so a long call can still be
-- stopped with SCRIPT KILL, having changed nothing), then rewritten once without the replayed
-- records, in their order: one pass, instead of one LREM scan per record.
local now = delayq_now(ARGV[1])
local legacy = ARGV[2] == '1'
local delay = tonumber(ARGV[3])
local CHUNK = 500 -- arguments per variadic call, well under Lua's stack limit

-- Read: which of the given records are still there (each record once per copy given).
local wanted = {}
for i = 4, #ARGV, 3 do
    wanted[ARGV[i]] = (wanted[ARGV[i]] or 0) + 1
end
local kept, replay = {}, {}
for _, record in ipairs(redis.call('lrange', KEYS[7], 0, -1)) do
    if (wanted[record] or 0) > 0 then
        wanted[record] = wanted[record] - 1
        replay[record] = (replay[record] or 0) + 1
    else
        kept[#kept + 1] = record
    end
end

-- Write: the list without the replayed records, then the values back into the queue.
local replayed = 0
for i = 4, #ARGV, 3 do
    local record, value, id = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if (replay[record] or 0) > 0 then
        replay[record] = replay[record] - 1
        if replayed == 0 then
            redis.call('unlink', KEYS[7])
            for j = 1, #kept, CHUNK do
                redis.call('rpush', KEYS[7], unpack(kept, j, math.min(j + CHUNK - 1, #kept)))
            end
        end
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
