-- delayq: delete one of delayq's own lists (dead letters or quarantine) and say how long it was.
--
-- KEYS[1]: the list, delayq_dead:{NAME} or delayq_quarantine:{NAME}
-- Returns: the number of members deleted.
local n = redis.call('llen', KEYS[1])
redis.call('del', KEYS[1])
return n
