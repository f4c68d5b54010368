-- delayq: offer a value under a business key, deduplicated within a window, atomically.
-- Not in Redisson. The key's mapping (a string in the queue's slot) holds the bytes of the
-- entry the key's last offer made and expires at the end of the window; the entry is pending
-- exactly when it is a member of the timeout zset (its bytes carry a random id), so a mapping
-- whose entry was transferred, polled, removed or cancelled, by delayq or a Java peer, counts as
-- absent.
--   throttle: a pending mapped entry stays as it is (due time, window) and this offer is dropped.
--   debounce: a pending mapped entry leaves (found in the value index, lib/values_record.lua, and out of
--             the order list by an LREM from the end nearer to it, as cancel.lua does) and this
--             offer's entry takes its place, due after this offer's delay; the window starts
--             again.
-- Otherwise the value is offered as offer.lua offers it and the mapping names it for a window.
--
-- Helpers: time, guard, entry, queue, position, values_field, values_record, values_sync,
--          values_lookup, values_step
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: timeout zset       redisson_delay_queue_timeout:{NAME}
-- KEYS[3]: order list         redisson_delay_queue:{NAME}
-- KEYS[4]: channel            redisson_delay_queue_channel:{NAME}
-- KEYS[5]: position index     delayq_index:{NAME} (kept in step; see lib/position.lua)
-- KEYS[6]: value index        delayq_values:{NAME}
-- KEYS[7]: dedup mapping      delayq_dedup:{NAME}:KEY (a string: the mapped entry's bytes)
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format: '0' Bc0Lc0, '1' dLc0
-- ARGV[3]: delay from now, ms
-- ARGV[4]: random entry id
-- ARGV[5]: the codec-encoded value
-- ARGV[6]: 'throttle' or 'debounce'
-- ARGV[7]: the window, ms (> 0)
-- ARGV[8]: most order-list entries to add to the value index in this call
-- ARGV[9]: most order-list elements the index does not cover that the call may read instead of
--          indexing them first (when no more are left after indexing, the lookup follows in this
--          call)
-- ARGV[10]: '1' when the caller waits for replicas (a durable offer): a kept offer then writes
--          the mapping again as it is (same bytes, same expiry), so that a WAIT on the caller's
--          connection covers the kept entry, whichever connection wrote it (the replication
--          stream is one: acknowledging this write acknowledges every earlier one); else '0'
-- Returns: { 0, order-list elements the value index does not cover yet } when it is not
--          ready (nothing was written: call again), or
--          { 1, 'offered' | 'kept' | 'replaced', the pending entry's handle (its first 9 bytes),
--          its due time (epoch ms, decimal) }.
local due = delayq_ms(delayq_now(ARGV[1]) + tonumber(ARGV[3]))
local legacy = ARGV[2] == '1'
local mapped = redis.call('get', KEYS[7])
local mapped_due = mapped and redis.call('zscore', KEYS[2], mapped)
if mapped_due and ARGV[6] ~= 'debounce' then
    if ARGV[10] == '1' then
        redis.call('set', KEYS[7], mapped, 'KEEPTTL')
    end
    return { 1, 'kept', delayq_index_member(mapped), delayq_ms(tonumber(mapped_due)) }
end

local outcome = 'offered'
local vx
if mapped_due then
    local id = delayq_index_member(mapped)
    vx = delayq_values_open(KEYS[2], KEYS[3], KEYS[6], legacy)
    if not delayq_values_ready(vx, tonumber(ARGV[8]), tonumber(ARGV[9]), 'id', { id }) then
        return delayq_values_not_ready(vx)
    end
    local candidates = delayq_values_by_id(vx, id)
    local alive = delayq_values_alive(vx, candidates)
    for i, tuple in ipairs(candidates) do
        if alive[i] and tuple.entry == mapped then
            delayq_values_unlist(vx, tuple)
            delayq_values_drop(vx, tuple)
            break
        elseif not alive[i] then
            delayq_values_drop(vx, tuple)
        end
    end
    -- Out of the zset even when the list had lost it: the replaced value must never come due.
    redis.call('zrem', KEYS[2], mapped)
    redis.call('zrem', KEYS[5], id)
    outcome = 'replaced'
end

local entry = delayq_pack(legacy, ARGV[4], ARGV[5])
-- Pending already: this very offer sent again after its reply was lost, once its window had
-- ended (see offer.lua); a second list element would never leave.
if redis.call('zadd', KEYS[2], due, entry) == 1 then
    redis.call('rpush', KEYS[3], entry)
end
delayq_publish_if_head(KEYS[2], KEYS[4], entry, due)
if vx then
    delayq_values_add(vx, entry)
    delayq_values_commit(vx)
    delayq_tidy_index(KEYS[3], KEYS[5])
end
redis.call('set', KEYS[7], entry, 'PX', ARGV[7])
return { 1, outcome, delayq_index_member(entry), due }
