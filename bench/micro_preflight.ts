/**
 * Micro-benchmark of the pre-flight route and engine (issue 34 point 4): 1,000 devices on a fresh PostgreSQL
 * schema (or PGlite), two polls each through the production store, then the route (in process, as the
 * pre-flight scenario calls it) and `runPreflight` alone, `ROUNDS` times each (default 40). Prints p50/p95.
 * Run under `--cpu-prof` to see where the engine's and the route's JavaScript time goes.
 *
 *   deno run -A --lock=deno.dev.lock bench/micro_preflight.ts [postgres|pglite]
 *
 * @module
 */
import { runPreflight } from "../core/harness/core.ts";
import { createApp } from "../core/harness/core.ts";
import { captureVendors, VENDORS } from "./_capture.ts";
import { benchServices, freshDb } from "./_db.ts";
import { registerDevices, replayModules } from "./_replay.ts";
import { makePolls, storeRound } from "./_store_sql.ts";
import { pct, TOKEN } from "./_util.ts";

const backend = (Deno.args[0] ?? "postgres") as "postgres" | "pglite";
const rounds = Number(Deno.env.get("ROUNDS") ?? 40);
const PLAN = "ngfw-throughput-decrypt-on";

const captures = await captureVendors();
await using db = await freshDb(backend);
const replay = replayModules(captures, { changeRate: 0.05 });
const { svc } = await benchServices(db, replay.modules);
const ids = await registerDevices(svc, 1000);
const polls = makePolls(
  captures,
  ids.map((id, i) => ({ id, vendor: VENDORS[i % VENDORS.length]! })),
  2,
  0.05,
);
for (const p of polls) await storeRound(db.kysely, svc.registry, p);
const app = createApp(svc);
const plan = svc.registry.plan(PLAN)!;
const req = () =>
  app.request("/api/test-runs/preflight", {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ planIdentifier: PLAN }),
  });
const route: number[] = [], engine: number[] = [], bare: number[] = [];
const parts: number[][] = [[], [], []];
let bytes = 0;
for (let k = 0; k < rounds + 5; k++) {
  let t = performance.now();
  const r = await req();
  bytes = (await r.arrayBuffer()).byteLength;
  if (k >= 5) route.push(performance.now() - t);
  t = performance.now();
  await runPreflight(db.kysely, svc.registry, plan);
  if (k >= 5) engine.push(performance.now() - t);
  // The engine, JSON and a Response without the app: what the route adds beyond these is the app's.
  t = performance.now();
  const res = await runPreflight(db.kysely, svc.registry, plan);
  const t1 = performance.now();
  const str = JSON.stringify(res);
  const t2 = performance.now();
  await new Response(str).arrayBuffer();
  if (k >= 5) {
    bare.push(performance.now() - t),
      parts[0].push(t1 - t),
      parts[1].push(t2 - t1),
      parts[2].push(performance.now() - t2);
  }
}
const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p95 ${pct(xs, 95).toFixed(1)} ms`;
console.log(parts.map((p) => pct(p, 50).toFixed(1)).join(" / "));
console.log(
  `${backend}: route ${f(route)} (${bytes} bytes); engine ${f(engine)}; engine + JSON + Response ${f(bare)}`,
);
