-- delayq: put dead letters back into the queue with a fresh attempt count.
-- Not in Redisson. Each record is removed by its exact bytes, so concurrent replays never replay
-- one twice.
--
-- Helpers: time, guard, entry, queue, position
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
-- ARGV[4]: a marker string that is no record (random per call)
-- ARGV[5]: how many records at the head of the list to look through
-- ARGV[6 + 3k]: a dead-letter record, exactly as stored, read from the head of the list
-- ARGV[7 + 3k]: its value bytes (parsed by the client)
-- ARGV[8 + 3k]: a random entry id for it
-- Returns: the number of records replayed.
--
-- The records were read from the head of the dead-letter list, which only grows at its tail (and
-- loses its oldest records when it is full): they are still within the first records of the list,
-- or gone (replayed by someone else, purged, trimmed). The call reads that window only (where the
-- client read them, plus as many again for records that came in between): a batch
-- that is exactly the head leaves with one LTRIM, otherwise each record found is marked and one
-- LREM pass over the window removes them; so a call costs the size of its batch, not of the list.
local now = delayq_now(ARGV[1])
local legacy = ARGV[2] == '1'
local delay = tonumber(ARGV[3])
local marker = ARGV[4]

-- Read: where the given records are in the window at the head (each record once per copy given).
local window = redis.call('lrange', KEYS[7], 0, tonumber(ARGV[5]) - 1)
local positions = delayq_window_positions(window)
local found, last = {}, -1
for i = 6, #ARGV, 3 do
    local list = positions[ARGV[i]]
    if list and #list > 0 then
        local pos = table.remove(list)
        found[#found + 1] = { pos = pos, value = ARGV[i + 1], id = ARGV[i + 2] }
        last = math.max(last, pos)
    end
end

-- Write: the records out of the list, then the values back into the queue.
if #found > 0 then
    if last == #found - 1 then
        redis.call('ltrim', KEYS[7], #found, -1)
    else
        for _, record in ipairs(found) do
            redis.call('lset', KEYS[7], record.pos, marker)
        end
        redis.call('lrem', KEYS[7], #found, marker)
    end
end
for _, record in ipairs(found) do
    redis.call('hdel', KEYS[5], record.value)
    redis.call('zrem', KEYS[6], record.value)
    if delay <= 0 then
        redis.call('rpush', KEYS[1], record.value)
    else
        delayq_schedule(KEYS[2], KEYS[3], KEYS[4], delayq_ms(now + delay), delayq_pack(legacy, record.id, record.value))
    end
end
return #found
