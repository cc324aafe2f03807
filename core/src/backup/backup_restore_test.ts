import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest, openTestDatabase, testBackends } from "../../harness/db.ts";
import { jsonReq, TEST_CRED_KEY, testServices } from "../../harness/app.ts";
import type { Db } from "../db/open.ts";
import { fixtureModules, startFixtureDevice } from "../../testing/fixture_modules.ts";
import { readBackup, restoreBackup, RestoreRefused, writeBackup } from "./archive.ts";
import { decryptSecret, importCredentialKey } from "../devices/credentials.ts";
import { sha256Hex } from "@dutlab/core";
import { verifyReportBytes } from "../report/verify.ts";
import {
  type App,
  type Auth,
  fetchReport,
  finishRun,
  register,
  snapshot,
  startRun,
} from "../../harness/runs_lab.ts";

const OTHER_KEY = "ff".repeat(32);

/** Every table's row count. */
async function counts(db: Db): Promise<Record<string, number>> {
  const tables = (await sql<{ t: string }>`select table_name as t from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not like 'kysely%'
    order by 1`.execute(db.kysely)).rows.map((r) => r.t);
  const out: Record<string, number> = {};
  for (const t of tables) {
    out[t] =
      (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(t)}`.execute(db.kysely)).rows[0]!
        .n;
  }
  return out;
}

const checkWith = (hex: string) => async (id: string, enc: string) => {
  const k = await importCredentialKey(hex);
  try {
    await decryptSecret([k], id, enc);
  } catch {
    throw new RestoreRefused(`device ${id}: wrong key`);
  }
};

/** A lab with two devices, two finished runs (reports), an operator token and a pruned history. */
async function lab(app: App, auth: Auth, sim: { url: string }, password: string) {
  const creds = { username: "admin", password };
  const a = await register(app, auth, "fixture-fw", "fw-backup-a", { sim, credentials: creds });
  const b = await register(app, auth, "fixture-fw", "fw-backup-b", { sim, credentials: creds });
  const runs: string[] = [];
  for (let i = 0; i < 2; i++) {
    await snapshot(app, auth, a);
    await snapshot(app, auth, b);
    const run = await startRun(app, auth, { planIdentifier: "fixture-plan" });
    await snapshot(app, auth, a);
    await finishRun(app, auth, run.executionId, {
      outcome: "passed",
      results: { latencySamplesMs: [4, 8, 15] },
    });
    runs.push(run.executionId);
  }
  const tok = await app.request(
    "/api/admin/tokens",
    jsonReq("POST", { name: "ops", role: "operator" }, auth),
  );
  assert.equal(tok.status, 201);
  await tok.body?.cancel();
  const pr = await app.request(
    "/api/admin/dut/snapshots/prune",
    jsonReq("POST", { olderThanDays: 30 }, auth),
  );
  assert.equal(pr.status, 200);
  await pr.body?.cancel();
  return { devices: [a, b], runs };
}

for (const target of testBackends()) {
  dbTest(
    `a backup taken while polls run restores into an empty ${target} database: same rows, payloads re-hash, reports verify, devices poll with the same credentials`,
    async (src) => {
      const { app, auth } = await testServices(src, fixtureModules());
      const dev = await startFixtureDevice();
      const dst = await openTestDatabase(target);
      try {
        const { devices, runs } = await lab(app, auth, dev.sim, dev.state.password);
        // Polls while the backup reads.
        const [{ archive, manifest }] = await Promise.all([
          writeBackup(src.kysely, src.kind),
          ...devices.flatMap((d) => [snapshot(app, auth, d), snapshot(app, auth, d)]),
        ]);
        assert.deepEqual(manifest.credentialKeys, [(await importCredentialKey(TEST_CRED_KEY)).id]);
        const backup = await readBackup(archive);
        const rowsInArchive = Object.fromEntries(manifest.tables.map((t) => [t.name, t.rows]));
        for (
          const t of [
            "devices",
            "snapshot_rows",
            "snapshot_series",
            "snapshot_payloads",
            "test_runs",
            "report_signatures",
            "api_tokens",
            "audit_log",
            "report_signing_keys",
            "snapshot_prunes",
          ]
        ) {
          assert.ok(rowsInArchive[t]! > 0, `${t} is in the archive`);
        }

        // The wrong key is refused before anything is written.
        await assert.rejects(
          restoreBackup(dst.kysely, backup, { checkCredential: checkWith(OTHER_KEY) }),
          RestoreRefused,
        );
        assert.equal(
          Object.values(await counts(dst)).filter((n) => n > 0).length,
          1,
          "only table_versions' seed row",
        );

        const summary = await restoreBackup(dst.kysely, backup, {
          checkCredential: checkWith(TEST_CRED_KEY),
        });
        assert.ok(summary.payloadsRehashed > 0);
        assert.equal(summary.reportsVerified, runs.length);
        // The same rows as the archive, in every table.
        const after = await counts(dst);
        for (const t of manifest.tables) assert.equal(after[t.name], t.rows, t.name);
        // A second restore into the now full database is refused.
        await assert.rejects(
          restoreBackup(dst.kysely, backup, { checkCredential: checkWith(TEST_CRED_KEY) }),
          /not empty/,
        );
        // Independently of the restore's own checks: every payload re-hashes, every report verifies.
        for (
          const p of await dst.kysely.selectFrom("snapshot_payloads").select(["sha256", "payload"]).execute()
        ) {
          assert.equal(await sha256Hex(p.payload), p.sha256);
        }
        const restored = await testServices(dst, fixtureModules());
        for (const id of runs) {
          const before = await fetchReport(app, auth, id);
          const r = await fetchReport(restored.app, restored.auth, id);
          assert.equal(r.status, 200);
          assert.equal(r.text, before.text);
          const v = await verifyReportBytes(new TextEncoder().encode(r.text));
          assert.equal(v.ok, true, JSON.stringify(v.findings));
          const sig = await restored.app.request(`/api/test-runs/${id}/report.dsse.json`, {
            headers: restored.auth,
          });
          const sigBefore = await app.request(`/api/test-runs/${id}/report.dsse.json`, { headers: auth });
          assert.equal(await sig.text(), await sigBefore.text());
        }
        // The operator token restored by its hash; the restored service polls the same devices.
        const ops = await sql<{ n: number }>`select count(*)::int as n from api_tokens where name = 'ops'`
          .execute(
            dst.kysely,
          );
        assert.equal(ops.rows[0]!.n, 1);
        const newest = await sql<{ id: string }>`select max(id)::text as id from snapshots`.execute(
          dst.kysely,
        );
        for (const d of devices) await snapshot(restored.app, restored.auth, d);
        const next = await sql<{ id: string }>`select min(id)::text as id from snapshots where id > ${
          newest.rows[0]!.id
        }::bigint`
          .execute(dst.kysely);
        assert.ok(next.rows[0]!.id, "new snapshots continue after the restored ids");
      } finally {
        await dev.sim.close();
        await dst.close();
      }
    },
  );
}

dbTest("the backup route streams the archive to an admin only", async (db) => {
  const { app, auth, svc } = await testServices(db, fixtureModules());
  const res = await app.request("/api/admin/backup", { headers: auth });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/gzip");
  const backup = await readBackup(new Uint8Array(await res.arrayBuffer()));
  assert.equal(backup.manifest.format, "dutlab-backup");
  for (const role of ["viewer", "operator"] as const) {
    const t = await svc.tokens.create(`backup-${role}`, role);
    const r = await app.request("/api/admin/backup", { headers: { authorization: `Bearer ${t.token}` } });
    assert.equal(r.status, 403);
    await r.body?.cancel();
  }
});

Deno.test("a damaged archive is refused before anything is read into a database", async () => {
  const db = await openTestDatabase("pglite");
  try {
    const { archive } = await writeBackup(db.kysely, db.kind);
    await assert.rejects(readBackup(archive.slice(0, archive.length - 40)), RestoreRefused);
    await assert.rejects(readBackup(new TextEncoder().encode("not an archive")), RestoreRefused);
  } finally {
    await db.close();
  }
});
