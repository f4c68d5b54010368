-- delayq: move due entries from the delayed queue onto the target list.
-- Mirrors: Redisson QueueTransferTask / RedissonDelayedQueue transfer script (3.x/4.x): the same
-- end state (values RPUSHed in due order, entries gone from the order list and the zset, the new
-- head's score returned), with two differences:
--   * a malformed entry is quarantined instead of aborting the script part-way (which in
--     Redisson leaves a half-done batch that is pushed again next time);
--   * due entries are first looked up in a window at the head of the order list (a batch that is
--     exactly the head leaves with one LTRIM); on long order lists, the others are found through
--     a position index instead of one LREM scan each, and the whole batch leaves the order list
--     in one LREM pass over a marker. That pass reads the list up to the last marker whatever
--     the batch's size, so on a long list the batch grows (up to ARGV[8]) while the call's time
--     allows, and the call stops taking entries when its time is spent (ARGV[9]: the pass and
--     the writes still to come are counted; the pass's cost per element is measured on the list
--     itself).
--
-- Helpers: time, guard, entry, queue, position, values_field
-- KEYS[1]: target list        NAME
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME} (not published to)
-- KEYS[5]: quarantine         delayq_quarantine:{NAME} (list of raw malformed entries)
-- KEYS[6]: position index     delayq_index:{NAME} (zset: first 9 bytes of an entry -> sequence)
-- KEYS[7]: value index        delayq_values:{NAME} (follows the list's life: lib/values_record.lua)
-- KEYS[8]: pause flag         delayq_paused:{NAME} (any type; read only when ARGV[10] is '1')
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: entries to move in this call (Redisson uses 100), unless the call runs out of time
-- ARGV[4]: order-list length from which the position index is used (0: never)
-- ARGV[5]: most order-list entries to add to the index in this call (it also stops after
--          INDEX_US or one pass's time, whichever is longer, or half its budget if less)
-- ARGV[6]: a marker string that is no entry (random per call)
-- ARGV[7]: while the index is in use, most list elements to scan for entries it cannot place
--          (those are in the unindexed tail: their count per call is this over the tail's length;
--          at least one while the call has moved nothing)
-- ARGV[8]: most entries to move when the batch grows to amortise the list pass
-- ARGV[9]: the call's time budget, microseconds of its own time: no entry is started once the
--          time spent plus the expected list pass reaches it (but every call moves at least one
--          due entry, and a pass that alone takes longer than half the budget stretches the
--          budget to twice the pass)
-- ARGV[10]: '1' when a scheduler calls: while the pause flag exists, nothing moves (one round
--          trip instead of a separate EXISTS before every transfer); '0' moves regardless
-- ARGV[11]: the lowest list-pass cost per element this caller measured lately, picoseconds
--          ('0': none). The call's own measurement is a few hundred µs of wall-clock time: when
--          Redis loses its core during it (more busy processes than cores), it comes out tens
--          of times too high, stretches the budget and grows the batch to match, and the call
--          runs for 100 ms. The lower of the two is used.
-- Returns: { moved, quarantined, head score as a string or false, entries found by the index,
--            entries found in the window at the head of the order list, now (epoch ms, the
--            time this call went by), the server's TIME in epoch µs as a string when now came
--            from it (ARGV[1] 'server') else false, 1 when paused (the head is then not
--            read: false) else 0, the list-pass cost per element this call measured in
--            picoseconds (whatever ARGV[11] was), or false when it measured none, 1 when the
--            value index exists and does not cover the order list's tail (the scheduler then
--            brings it up to date: index_values.lua) else 0 }
--
-- The position index and what keeps it true: lib/position.lua.
local legacy = ARGV[2] == '1'
local batch = tonumber(ARGV[3])
local index_from = tonumber(ARGV[4])
local index_chunk = tonumber(ARGV[5])
local marker = ARGV[6]
local scan_budget = tonumber(ARGV[7])
local max_batch = math.max(batch, tonumber(ARGV[8]))
local budget_us = tonumber(ARGV[9])
local pass_hint_ps = tonumber(ARGV[11])
local CHUNK = 500 -- arguments per variadic call, well under Lua's stack limit
local GROW_SLICE = 200 -- due entries fetched at a time when the batch grows
local CHECK_EVERY = 16 -- entries moved between two looks at the clock
-- Microseconds a call spends at least building the position index while it is behind: a long
-- list is indexed over many short calls (as the value index is), so that on a list whose pass
-- is short no call holds Redis longer than about 10 ms. On a list whose pass is longer, a call
-- that meets the unindexed tail scans it anyway, so it indexes for as long as one pass (at most
-- doubling the call): the calls until the index is complete stay about as many at 1M entries
-- as at 100k, where 3 ms a call at 1M moved one entry a call for minutes.
local INDEX_US = 3000
local CALIBRATE_FROM = 50000 -- list length from which the pass's cost is measured
local CALIBRATE_ELEMENTS = 8192
-- Microseconds per moved entry of the writes after the loop (index and timeout ZREMs, RPUSH),
-- counted in the budget while the batch grows.
local FINISH_US = 2

local clock = delayq_clock_us
local started = clock()

local function each_chunk(list, step, fn)
    for i = 1, #list, step do
        fn(unpack(list, i, math.min(i + step - 1, #list)))
    end
end

-- Microseconds one LREM pass spends per list element: measured with an LPOS over a stretch of
-- the list (the marker is in no list) when the list is long, else a typical figure; counted
-- half again, as the rest of a long list is colder in the caches than its head; never more
-- than the caller's lowest recent measurement (ARGV[11]). Also returns what was measured, in
-- picoseconds per element, or false.
local function pass_cost_per_element(length)
    if length < CALIBRATE_FROM then
        return 0.02, false
    end
    local t0 = clock()
    redis.call('lpos', KEYS[3], marker, 'maxlen', CALIBRATE_ELEMENTS)
    local measured = math.max(0.001, (clock() - t0) / CALIBRATE_ELEMENTS)
    local used = measured
    if pass_hint_ps > 0 then
        used = math.min(measured, pass_hint_ps / 1000000)
    end
    return 1.5 * used, math.floor(measured * 1000000)
end

-- Brings the index up to date (or drops it below the length it is used from), spending at most
-- index_chunk entries and until index_until (clock). Returns whether it may be used, whether its
-- positions can be trusted without reading the list, and how many entries it covers.
local function sync_index(length, index_until)
    if index_from <= 0 or length < index_from then
        redis.call('unlink', KEYS[6])
        return false, false, 0
    end
    local exact, covered = delayq_position_sync(KEYS[3], KEYS[6], length, index_chunk, index_until)
    return true, exact, covered
end

-- One TIME read gives both: now in ms and, for the scheduler's clock, the µs it came from.
local us = ARGV[1] == 'server' and delayq_server_us()
local now = delayq_ms(us and math.floor(us / 1000) or delayq_now(ARGV[1]))
local server_us = us and delayq_ms(us)
if ARGV[10] == '1' and redis.call('exists', KEYS[8]) == 1 then
    -- Paused: the scheduler looks again later whatever the head is.
    return { 0, 0, false, 0, 0, now, server_us, 1, false, 0 }
end
local due = redis.call('zrangebyscore', KEYS[2], '-inf', now, 'limit', 0, batch)
local moved, quarantined, indexed, at_head_count = 0, 0, 0, 0
local measured_ps = false
if #due > 0 then
    -- Head fast path: entries that are due are usually near the head of the order list (offered
    -- in due order, or mostly so). Look them up in a window at the head first; only when some
    -- are elsewhere is the position index brought up to date (and paid for).
    local window = redis.call('lrange', KEYS[3], 0, #due + math.min(#due, 100) - 1)
    local at_head = delayq_window_positions(window)
    local all_at_head = true
    do
        local wanted = {}
        for _, entry in ipairs(due) do
            wanted[entry] = (wanted[entry] or 0) + 1
            local list = at_head[entry]
            if not list or #list < wanted[entry] then
                all_at_head = false
                break
            end
        end
    end
    local use_index, exact, covered = false, false, 0
    local length, per_element, budget = #window, 0, budget_us
    local index_kept
    if all_at_head then
        -- The index is not needed, but if one exists its members must leave with the batch.
        index_kept = redis.call('exists', KEYS[6]) == 1
    else
        length = redis.call('llen', KEYS[3])
        per_element, measured_ps = pass_cost_per_element(length)
        -- A pass that alone takes most of the budget would leave no time to move entries:
        -- amortise it instead (the call then takes about twice the pass).
        budget = math.max(budget_us, 2 * length * per_element)
        local index_us = math.max(INDEX_US, length * per_element)
        use_index, exact, covered = sync_index(length, started + math.min(index_us, budget / 2))
        index_kept = use_index
    end

    -- With the index in use, an entry it cannot place is in the unindexed tail and costs a scan
    -- of it (from its end): allow as many as keep the scanned elements within the budget, and
    -- end the batch early, still in due order, when they run out; one while nothing has moved,
    -- so that every call makes progress. (Without the index, each costs a scan from the head,
    -- as in Redisson.)
    local scans_left = math.huge
    if use_index then
        scans_left = math.floor(scan_budget / math.max(length - covered, 1))
    end
    local values, members, taken, marked = {}, {}, {}, 0
    local head_positions, last_head_position = {}, -1
    local last_marked = -1 -- the pass reads the list up to the last marker
    -- Whether the time spent, plus the pass and the writes still to come, has reached the budget.
    local function out_of_time()
        return clock() - started + (last_marked + 1) * per_element + #taken * FINISH_US >= budget
    end
    local exhausted = #due < batch
    local i = 1
    while true do
        if i > #due then
            -- The batch grows while the time allows: the pass costs the same for one entry as
            -- for thousands, so the more the call moves, the less each entry pays for it (on an
            -- 83,333-entry list, growing only until moving had cost as much as the pass moved
            -- 31,000/s; growing to the budget, 85,000/s).
            if all_at_head or exhausted or #due >= max_batch then
                break
            end
            if out_of_time() then
                break
            end
            local ask = math.min(GROW_SLICE, max_batch - #due)
            local more = redis.call('zrangebyscore', KEYS[2], '-inf', now, 'limit', #due, ask)
            exhausted = #more < ask
            if #more == 0 then
                break
            end
            for _, entry in ipairs(more) do
                due[#due + 1] = entry
            end
        end
        if i > 1 and i % CHECK_EVERY == 0 and out_of_time() then
            break
        end
        local entry = due[i]
        local placed = false
        local list = at_head[entry]
        if list and #list > 0 then
            local pos = table.remove(list)
            if all_at_head then
                -- Nothing else moves in this call: positions stay valid until the end.
                head_positions[#head_positions + 1] = pos
                last_head_position = math.max(last_head_position, pos)
            else
                redis.call('lset', KEYS[3], pos, marker)
                marked = marked + 1
                last_marked = math.max(last_marked, pos)
            end
            placed = true
            at_head_count = at_head_count + 1
        elseif use_index then
            local pos = redis.call('zrank', KEYS[6], delayq_index_member(entry))
            if pos and (exact or redis.call('lindex', KEYS[3], pos) == entry) then
                redis.call('lset', KEYS[3], pos, marker)
                marked = marked + 1
                last_marked = math.max(last_marked, pos)
                indexed = indexed + 1
                placed = true
            end
        end
        if not placed then
            if scans_left <= 0 and #taken > 0 then
                break
            end
            scans_left = scans_left - 1
            -- Not in the head window. With a sound index, an entry it does not know is in the
            -- unindexed tail; without one, the first occurrence is past the window.
            redis.call('lrem', KEYS[3], use_index and -1 or 1, entry)
        end
        if index_kept then
            members[#members + 1] = delayq_index_member(entry)
        end
        taken[#taken + 1] = entry
        local value = delayq_value(entry, legacy)
        if value then
            values[#values + 1] = value
            moved = moved + 1
        else
            redis.call('rpush', KEYS[5], entry)
            quarantined = quarantined + 1
        end
        i = i + 1
    end
    if #head_positions > 0 then
        if last_head_position == #head_positions - 1 then
            -- The batch is exactly the head of the list.
            redis.call('ltrim', KEYS[3], #head_positions, -1)
        else
            for _, pos in ipairs(head_positions) do
                redis.call('lset', KEYS[3], pos, marker)
            end
            marked = marked + #head_positions
        end
    end
    if marked > 0 then
        -- One pass removes the whole batch; it stops after the last marker.
        redis.call('lrem', KEYS[3], marked, marker)
    end
    each_chunk(members, CHUNK, function(...)
        redis.call('zrem', KEYS[6], ...)
    end)
    each_chunk(values, CHUNK, function(...)
        redis.call('rpush', KEYS[1], ...)
    end)
    each_chunk(taken, CHUNK, function(...)
        redis.call('zrem', KEYS[2], ...)
    end)
end

delayq_tidy_index(KEYS[3], KEYS[6], KEYS[7])
local head = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
return { moved, quarantined, head[2] or false, indexed, at_head_count, now, server_us, 0,
    measured_ps, delayq_values_behind(KEYS[3], KEYS[7]) }
