-- wrk script: GET requests rotating over the paths given after `--` on the wrk command line, so that a
-- run touches many response-cache entries instead of one. Used by bench/load.ts (npm run bench, bench:mixed).
local paths = {}
local i = 0

function init(args)
  for _, path in ipairs(args) do
    paths[#paths + 1] = path
  end
  if #paths == 0 then
    error("rotate.lua needs at least one path after --")
  end
end

function request()
  i = (i % #paths) + 1
  return wrk.format("GET", paths[i])
end
