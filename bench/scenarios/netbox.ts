/**
 * Scenario netbox (issue 50 "Scale"): 10,000 NetBox devices (the local NetBox peer generates them over 3 sites,
 * 3 roles, 5 platforms, 4 tags; pages of 1,000) imported to a lab-file diff: `POST /api/admin/dut/lab/from-netbox`
 * (NetBox's status, every page, the mapping, the provenance recorded) then `POST /api/admin/dut/lab/plan` of
 * the file (10,000 to create), in-process over the real service and modules; the lab applied; then a
 * no-change re-sync (import + plan), which must be an empty diff. Target ≤ 60 s each. The service runs with
 * DUT_BODY_LIMIT_BYTES=8 MiB: the plan request of 10,000 devices is larger than the default 1 MiB.
 *
 * @module
 */
import type { Figure } from "../_util.ts";
import type { Ctx } from "../main.ts";
import { benchServices, freshDb } from "../_db.ts";
import { createApp } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { generatedDevices, PEER_TOKEN, startNetBoxPeer } from "../../tools/netbox_peer.ts";

const MAPPING = {
  apiVersion: "dutlab/v1",
  kind: "NetBoxMapping",
  lab: "netbox-bench",
  vendor: ["vendor-a-ngfw", "vendor-b-ngfw", "vendor-c-ngfw", "vendor-a-switch", "vendor-a-bmc"].map((v) => ({
    match: { platform: v },
    vendor: v,
  })),
  managementUrl: { from: "template", template: "https://{name}.{site}.lab.example:8443" },
  rules: [{ match: {}, credential: "admin", pollIntervalSeconds: 3600, enabled: false }],
  credentials: { admin: { username: "admin", password: "env:NETBOX_BENCH_PASSWORD" } },
};

export async function run(ctx: Ctx): Promise<Figure[]> {
  const n = ctx.quick ? 2_000 : 10_000;
  const figures: Figure[] = [];
  for (const backend of ["pglite", "postgres"] as const) {
    await using db = await freshDb(backend);
    // A 10,000-device lab file is ~1.7 MB of JSON: over the default 1 MiB body limit (docs/netbox.md says so).
    const { svc } = await benchServices(db, modules, { DUT_BODY_LIMIT_BYTES: String(8 * 1024 * 1024) });
    const app = createApp(svc);
    const auth = { authorization: `Bearer ${svc.config.ADMIN_TOKEN}`, "content-type": "application/json" };
    const post = async (path: string, body: unknown) => {
      const r = await app.request(path, { method: "POST", headers: auth, body: JSON.stringify(body) });
      const json = await r.json();
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(json).slice(0, 500)}`);
      return json;
    };
    const peer = await startNetBoxPeer({ devices: generatedDevices(n) });
    try {
      const sync = async () => {
        const t0 = performance.now();
        const imp = await post("/api/admin/dut/lab/from-netbox", {
          netbox: { url: peer.url, token: PEER_TOKEN },
          mapping: MAPPING,
        });
        const t1 = performance.now();
        const plan = await post("/api/admin/dut/lab/plan", {
          lab: imp.lab,
          secrets: { admin: "bench-Pw-1" },
        });
        const t2 = performance.now();
        return { imp, plan, importS: (t1 - t0) / 1000, planS: (t2 - t1) / 1000, totalS: (t2 - t0) / 1000 };
      };
      const fig = (name: string, value: number, extra: Partial<Figure> = {}): Figure => ({
        scenario: "netbox",
        name,
        value: Math.round(value * 100) / 100,
        unit: "s",
        params: { n, backend, pages: Math.ceil(n / 1000) },
        command: ctx.command,
        ...extra,
      });
      ctx.log(`${backend}: first sync of ${n} devices`);
      const first = await sync();
      if (first.plan.summary.create !== n) {
        throw new Error(`expected ${n} creates: ${JSON.stringify(first.plan.summary)}`);
      }
      figures.push(
        fig(`${n} NetBox devices imported to a lab-file diff (import + plan)`, first.totalS, {
          target: "≤ 60 s for 10,000 devices",
          pass: first.totalS <= 60,
        }),
        fig("import alone (status, every page, mapping, provenance)", first.importS),
        fig("plan alone (the diff of the file)", first.planS),
      );
      ctx.log(`${backend}: apply`);
      const t0 = performance.now();
      await post("/api/admin/dut/lab/apply", {
        lab: first.imp.lab,
        secrets: { admin: "bench-Pw-1" },
        expectedGeneration: first.plan.generation,
        planHash: first.plan.planHash,
      });
      figures.push(fig(`apply of the ${n} devices (one transaction)`, (performance.now() - t0) / 1000));
      ctx.log(`${backend}: no-change re-sync`);
      const again = await sync();
      const s = again.plan.summary;
      const empty = s.create + s.update + s.remove + s.conflict === 0 && s.unchanged === n;
      figures.push(
        fig("no-change re-sync to an empty diff (import + plan)", again.totalS, {
          target: "≤ 60 s and an empty diff",
          pass: empty && again.totalS <= 60,
          note: `summary ${JSON.stringify(s)}`,
        }),
      );
    } finally {
      await peer.close();
    }
  }
  return figures;
}
