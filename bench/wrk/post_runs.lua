-- wrk script: POST distinct run records (unique idempotency keys) to /api/v1/runs.
-- wrk -t2 -c8 -d30s -s bench/wrk/post_runs.lua http://127.0.0.1:PORT
local counter = 0
local thread_id = 0
setup = function(thread)
  thread:set("tid", thread_id)
  thread_id = thread_id + 1
end
request = function()
  counter = counter + 1
  local i = counter * 16 + tid
  local samples = {}
  for k = 0, 9 do samples[#samples + 1] = string.format("%.2f", 1944.0 + ((i + k) % 5) * 0.3) end
  local body = string.format(
    '{"benchmark":"wrk-decode","config":{"tp":8,"batch_size":%d},' ..
    '"hardware":{"gpu":"NVIDIA H200","gpu_count":8},"commit":"%08x","label":"ci-%d",' ..
    '"metrics":{"tok_s":{"samples":[%s]},"kv_capacity_tokens":{"samples":[578368]}},' ..
    '"idempotency_key":"wrk-%d-%d"}',
    ({1, 4, 7, 8})[i % 4 + 1], i, i, table.concat(samples, ","), os.time(), i)
  return wrk.format("POST", "/api/v1/runs", {["Content-Type"] = "application/json"}, body)
end
response = function(status, headers, body)
  if status ~= 201 and status ~= 200 then
    io.write("status " .. status .. ": " .. body .. "\n")
  end
end
