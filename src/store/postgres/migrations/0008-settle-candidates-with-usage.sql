-- The autopilot settles an open stack only once it has usage (one without has nothing to claim), so the
-- index it finds stacks by fill in now holds only those. Most of a store's stacks are other nodes' and never
-- have usage reported: each one's entry cost a share of a stack's insert while indexing (docs/PERFORMANCE.md,
-- twelfth pass). A stack enters the index with its first usage report.
DROP INDEX stacks_open_by_fill;
CREATE INDEX stacks_open_by_fill ON stacks (selected_node_id, fill_ppm)
  WHERE NOT in_settle_period AND NOT is_claimed AND already_computed_units <> 0;
