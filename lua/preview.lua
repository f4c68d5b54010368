-- delayq: a page of one of a queue's lists as previews (each member's first bytes and its whole
-- length), read one member at a time and cut short after the member that takes the bytes read
-- past a budget: a call copies at most one big member, and never returns one whole.
-- Not in Redisson.
--
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: in-flight zset     delayq_inflight:{NAME}
-- KEYS[4]: in-flight hash     delayq_inflight_data:{NAME}
-- KEYS[5]: the list           LIST (NAME, delayq_dead:{NAME} or delayq_quarantine:{NAME})
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used; the client unpacks)
-- ARGV[3]: what is read: 'list' (KEYS[5]), 'pending' (KEYS[2], members are entries) or
--          'in_flight' (KEYS[3], members are delivery ids whose values are in KEYS[4])
-- ARGV[4]: first rank read (0 is the head)
-- ARGV[5]: most members read
-- ARGV[6]: bytes of each member (or value) returned
-- ARGV[7]: budget: after the member that takes the bytes read to it or past it, stop
-- Returns: { cut, then per member: id or false, score or false, length or false,
--            first bytes or false }, where cut is 1 when the budget ended the page early; an
--          in-flight delivery whose value is gone has length and first bytes false.
local what, first = ARGV[3], tonumber(ARGV[4])
local last = first + tonumber(ARGV[5]) - 1
local shown, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local out = { 0 }
local read = 0
for rank = first, last do
    local id, score, value = false, false, nil
    if what == 'list' then
        value = redis.call('lindex', KEYS[5], rank)
        if not value then
            break
        end
    else
        local zset = KEYS[2]
        if what == 'in_flight' then
            zset = KEYS[3]
        end
        local page = redis.call('zrange', zset, rank, rank, 'withscores')
        if #page == 0 then
            break
        end
        score = page[2]
        if what == 'in_flight' then
            id = page[1]
            value = redis.call('hget', KEYS[4], id)
        else
            value = page[1]
        end
    end
    out[#out + 1] = id
    out[#out + 1] = score
    if value then
        out[#out + 1] = #value
        out[#out + 1] = string.sub(value, 1, shown)
        read = read + #value
    else
        out[#out + 1] = false
        out[#out + 1] = false
    end
    if read >= budget and rank < last then
        out[1] = 1
        break
    end
end
return out
