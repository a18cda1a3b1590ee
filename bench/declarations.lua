-- wrk script of bench_filing_api.py: POST one 10-line PR declaration per request.
--
--   wrk -s bench/declarations.lua URL -- TOKEN LODGINGS OFFSET MODE
--
-- MODE "new": request k (over all threads) files for slot OFFSET + k, slot s being
-- lodging s % LODGINGS and period number s // LODGINGS (2015-01, 2015-02, ...): every
-- request is a new filing (no amendments) as long as OFFSETs do not overlap.
-- MODE "amend": every request refiles period 2014-12 of lodging (OFFSET + k) % LODGINGS,
-- filed beforehand by the bench: each request is an amendment of an existing filing
-- (LODGINGS >> connections, so two in-flight amendments of one filing are rare).

local token, lodgings, offset, mode
local threads = {}
local counter = 0
local thread_id = 0
local thread_count = 1

function setup(thread)
   thread:set("id", #threads)
   table.insert(threads, thread)
end

function init(args)
   token = args[1]
   lodgings = tonumber(args[2])
   offset = tonumber(args[3])
   mode = args[4] or "new"
   thread_id = tonumber(id or 0)
   thread_count = tonumber(args[5] or 2)
end

local function period_of(n)
   local year = 2015 + math.floor(n / 12)
   local month = n % 12 + 1
   return string.format("%04d-%02d", year, month)
end

function request()
   local k = counter * thread_count + thread_id
   counter = counter + 1
   local lodging, period
   if mode == "amend" then
      lodging = (offset + k) % lodgings
      period = "2014-12"
   else
      local slot = offset + k
      lodging = slot % lodgings
      period = period_of(math.floor(slot / lodgings))
   end
   local revenue = 1000 + k % 997
   local body = string.format(
      '{"lodging":"PR-%07d-0","period":"%s","room_revenue":"%d.00","paid_unused_rooms":"40.00",' ..
      '"room_penalties":"15.00","resort_and_other_fees":"25.00","surcharges_and_service_charges":"12.50",' ..
      '"intermediary_retained":"150.00","all_inclusive_global_charges":"0.00","room_nights":5,' ..
      '"timeshare_owner_unit_days":0,"tax_itemized":true,"declared":{"tax":"%d.00"}}',
      lodging + 1, period, revenue, math.floor(revenue * 9 / 100))
   return wrk.format("POST", "/v1/declarations", {
      ["Content-Type"] = "application/json",
      ["Authorization"] = "Bearer " .. token,
   }, body)
end
