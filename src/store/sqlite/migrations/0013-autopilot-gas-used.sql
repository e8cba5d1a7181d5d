-- The gas each autopilot transaction used (MIST, net of the storage rebate), so that its daily cap
-- (--autopilot-max-gas-per-day) counts what was spent, across restarts and daemons sharing the store.
ALTER TABLE autopilot_actions ADD COLUMN gas_used ANY;
-- The actions that spend (or may have spent) gas, by time: the cap's one range question.
CREATE INDEX autopilot_actions_spending ON autopilot_actions (at)
  WHERE status IN ('pending', 'succeeded', 'failed');
