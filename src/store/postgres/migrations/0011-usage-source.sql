-- The usage source (--usage-source atoma-state) sets a stack's usage to what the node's inference service
-- recorded, which can go down as well as up (a request's estimate is reserved, then corrected). A stack's
-- stack_filled events fire when its usage first reaches 0.5, 0.9 and 1 of its units: the highest fill a
-- stack has reached is kept, so that usage going down and up again past a threshold reports it once.
ALTER TABLE stacks ADD COLUMN fill_peak_ppm INTEGER NOT NULL DEFAULT 0;
UPDATE stacks SET fill_peak_ppm = fill_ppm WHERE fill_ppm <> 0;
