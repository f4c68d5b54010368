-- delayq-gateway: claim a deduplication id for a message, unless another holds it. The key holds
-- `~SINCE MESSAGE` while MESSAGE is being stored (SINCE: Redis's clock when it was claimed, ms),
-- then `MESSAGE` once it is stored (store_update.lua settles it). A pending claim older than
-- the lease (its publisher died) is taken over.
-- Not in Redisson.
--
-- KEYS[1]: dedup id           delayq_gateway_dedup:{QUEUE}:ID
-- ARGV[1]: the message id
-- ARGV[2]: the deduplication window, ms
-- ARGV[3]: the lease of a pending claim, ms
-- Returns: { state, message }: 'claimed' (this message's), 'pending' or 'settled' (another's).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local held = redis.call('GET', KEYS[1])
if held then
    local since, first = string.match(held, '^~(%d+) (.+)$')
    if not since then
        return { 'settled', held }
    end
    if now - tonumber(since) < tonumber(ARGV[3]) then
        return { 'pending', first }
    end
end
redis.call('SET', KEYS[1], '~' .. now .. ' ' .. ARGV[1], 'PX', ARGV[2])
return { 'claimed', ARGV[1] }
