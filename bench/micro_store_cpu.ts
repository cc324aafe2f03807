/**
 * The poll store's CPU per poll on one back end, without devices or TLS: the production `PollStore` (group
 * commit, 64 writers) stores rounds of pre-hashed polls of 100 devices (the bench's captured payloads), and the
 * process's CPU time over the timed rounds is divided by the polls. What the poll scenario's "service CPU per
 * poll" holds of the database write, without the TLS client and the device farm that dominate (and blur) it.
 *
 *     deno run -A --lock=deno.dev.lock bench/micro_store_cpu.ts pglite 0.05   # 95 % of payloads unchanged
 *     deno run -A --lock=deno.dev.lock bench/micro_store_cpu.ts postgres 1    # every payload new
 *
 * `ROUNDS` (default 12) timed rounds after two untimed ones. Used in BENCHMARKS.md section 10c.
 *
 * @module
 */
import { captureVendors, VENDORS } from "./_capture.ts";
import { benchServices, freshDb } from "./_db.ts";
import { registerDevices, replayModules } from "./_replay.ts";
import { makePolls, storeRound } from "./_store_sql.ts";

const backend = (Deno.args[0] ?? "pglite") as "pglite" | "postgres";
const rate = Number(Deno.args[1] ?? 0.05);
const rounds = Number(Deno.env.get("ROUNDS") ?? 12);
const captures = await captureVendors();
await using db = await freshDb(backend);
const { svc } = await benchServices(db, replayModules(captures, { changeRate: rate }).modules);
const ids = await registerDevices(svc, 100);
const devices = ids.map((id, i) => ({ id, vendor: VENDORS[i % VENDORS.length]! }));
const polls = makePolls(captures, devices, rounds + 2, rate);
for (const r of [0, 1]) await storeRound(db.kysely, svc.registry, polls[r]!);
const c0 = process.cpuUsage();
const t0 = performance.now();
for (let r = 2; r < rounds + 2; r++) await storeRound(db.kysely, svc.registry, polls[r]!);
const cpu = process.cpuUsage(c0);
const wall = performance.now() - t0;
const n = ids.length * rounds;
console.log(
  `${backend}, change rate ${rate}: CPU per poll ${((cpu.user + cpu.system) / 1000 / n).toFixed(2)} ms, ` +
    `wall per poll ${(wall / n).toFixed(2)} ms (${n} polls)`,
);
