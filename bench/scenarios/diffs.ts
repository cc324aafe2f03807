/**
 * Issue 22 point 6 (part): the diff of two ~1 MiB payloads (`diffPayloads`, what the diff endpoint, the
 * change history and the drift annex compute per change). The payloads are access-rule lists in the shape
 * of a firewall's policy table; the second has one rule inserted at the top, one removed in the middle and
 * one changed (the common case of a config change). The change-history figure (10^6 snapshots) is the
 * `changes` scenario.
 *
 * @module
 */
import { diffPayloads } from "../../core/harness/core.ts";
import { type Figure, pct, round } from "../_util.ts";
import type { Ctx } from "../main.ts";

function rules(n: number) {
  return Array.from({ length: n }, (_, i) => ({
    id: `rule-${i}`,
    name: `allow-app-${i}`,
    action: i % 7 === 0 ? "deny" : "allow",
    sourceNetworks: [`10.${i % 256}.0.0/16`, "192.0.2.0/24"],
    destinationNetworks: ["any"],
    ports: [{ protocol: "tcp", port: 443 }, { protocol: "tcp", port: 8443 }],
    logging: { start: false, end: true },
  }));
}

export function run(ctx: Ctx): Promise<Figure[]> {
  let n = 1000;
  while (JSON.stringify({ rules: rules(n) }).length < 1024 * 1024) n += 500;
  const a = { rules: rules(n) };
  const b = structuredClone(a);
  b.rules.splice(0, 0, { ...b.rules[0]!, id: "rule-new", name: "inserted" });
  b.rules.splice(n >> 1, 1);
  b.rules[n >> 2]!.action = "deny";
  const bytes = JSON.stringify(a).length;
  const times: number[] = [];
  const iterations = ctx.quick ? 5 : 20;
  for (let i = 0; i < iterations + 2; i++) {
    const t0 = performance.now();
    const d = diffPayloads(a, b);
    const ms = performance.now() - t0;
    if (d.patch.length !== 3) throw new Error(`expected 3 operations, got ${d.patch.length}`);
    if (i >= 2) times.push(ms); // two warm-up rounds
  }
  ctx.log(`diff of two ${bytes} B payloads (${n} rules): p50 ${round(pct(times, 50))} ms`);
  const params = { bytes, rules: n, iterations };
  return Promise.resolve([50, 95].map((p) => ({
    scenario: "diffs",
    name: `diff of two 1 MiB payloads, p${p}`,
    value: round(pct(times, p)),
    unit: "ms",
    params,
    target: "≤ 50 ms",
    pass: pct(times, p) <= 50,
    command: ctx.command,
  })));
}
