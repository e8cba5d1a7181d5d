-- The conditions the operator hears of when they start and when they end (operations/conditions.ts): the
-- signer's gas running low, the indexer behind, the autopilot halted or failing. One row per condition,
-- written in the transaction of the node event that announces the change, so a condition is announced once
-- whichever process sees it, and a restart does not announce again what still holds. No row: it never held.
CREATE TABLE node_conditions (
  condition TEXT PRIMARY KEY,
  holds BOOLEAN NOT NULL,
  since BIGINT NOT NULL
);
