/**
 * Signed, portable evidence: report signatures (DSSE + in-toto), the public key list and rotation,
 * OpenSSL verification over the documented bytes, and the standalone verifier run from an empty
 * directory outside the repository with only the public key.
 */
import assert from "node:assert/strict";
import { sql } from "kysely";
import { dbTest } from "../../core/harness/db.ts";
import { jsonReq, testServices } from "../../core/harness/app.ts";
import { fixtureModules } from "@dutlab/core/testing";
import { generateSigningKey, pae, PAYLOAD_TYPE } from "../../core/harness/core.ts";
import { type App, type Auth, finishRun, startRun } from "../../core/harness/runs_lab.ts";
import { checkEnvelope, checkReport, loadKeys } from "../../tools/verify_report_src.ts";

const PLAN = "fixture-plan";
const dec = new TextDecoder();
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

async function finishedRun(app: App, auth: Auth): Promise<string> {
  const run = await startRun(app, auth, { planIdentifier: PLAN });
  await finishRun(app, auth, run.executionId, {
    outcome: "passed",
    results: { latencySamplesMs: [3, 4, 5] },
  });
  return run.executionId;
}

async function get(app: App, path: string, headers: Record<string, string> = {}) {
  const res = await app.request(path, { headers });
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** Run a command; the environment is inherited (proxy, CA and cache variables included). */
async function run(cmd: string, args: string[], cwd: string) {
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

dbTest(
  "a finished report is signed; the key list is public; OpenSSL verifies the documented bytes",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    const id = await finishedRun(app, auth);

    const keysRes = await get(app, "/api/report-keys"); // no token
    assert.equal(keysRes.res.status, 200);
    const { keys } = JSON.parse(dec.decode(keysRes.bytes));
    assert.equal(keys.length, 1);
    const [key] = keys;
    assert.equal(key.algorithm, "Ed25519");
    assert.equal(key.current, true);
    assert.equal(key.validUntil, null);
    assert.match(
      key.publicKeyPem,
      /^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=\n]+-----END PUBLIC KEY-----\n$/,
    );
    assert.deepEqual(Object.keys(key.publicKeyJwk).sort(), ["alg", "crv", "kid", "kty", "use", "x"]);
    assert.ok(!JSON.stringify(keys).includes('"d"'), "no private key part");

    const report = await get(app, `/api/test-runs/${id}/report.json`, auth);
    assert.equal(report.res.headers.get("x-report-signature-key"), key.keyId);
    const text = dec.decode(report.bytes);
    const sha = JSON.parse(text).reportSha256;

    const envRes = await get(app, `/api/test-runs/${id}/report.dsse.json`, auth);
    assert.equal(envRes.res.status, 200);
    assert.equal(envRes.res.headers.get("x-report-signature-key"), key.keyId);
    const again = await get(app, `/api/test-runs/${id}/report.dsse.json`, auth);
    assert.deepEqual(again.bytes, envRes.bytes, "the same envelope bytes on every fetch");
    const env = JSON.parse(dec.decode(envRes.bytes));
    assert.equal(env.payloadType, PAYLOAD_TYPE);
    assert.equal(env.signatures[0].keyid, key.keyId);
    const statement = JSON.parse(dec.decode(unb64(env.payload)));
    assert.equal(statement._type, "https://in-toto.io/Statement/v1");
    assert.deepEqual(statement.subject[0], { name: `report-${id}.canonical.json`, digest: { sha256: sha } });

    assert.equal((await get(app, `/api/test-runs/${id}/report.dsse.json`)).res.status, 401);
    const unknown = await get(app, `/api/test-runs/${crypto.randomUUID()}/report.dsse.json`, auth);
    assert.equal(unknown.res.status, 404);
    assert.equal((await get(app, `/api/test-runs/not-a-uuid/report.dsse.json`, auth)).res.status, 404);

    // OpenSSL 3, over the bytes docs/reports.md "Signatures" documents.
    const dir = await Deno.makeTempDir({ prefix: "dutlab-openssl-" });
    try {
      await Deno.writeTextFile(`${dir}/key.pem`, key.publicKeyPem);
      // The PAE built with the shell line docs/reports.md "Verifying a report" gives, byte for byte.
      await Deno.writeFile(`${dir}/payload.json`, unb64(env.payload));
      const shell = await run("bash", [
        "-c",
        `{ printf 'DSSEv1 28 application/vnd.in-toto+json %d ' "$(wc -c < payload.json)"; cat payload.json; } > pae.bin`,
      ], dir);
      assert.equal(shell.code, 0, shell.stderr);
      assert.deepEqual(await Deno.readFile(`${dir}/pae.bin`), pae(env.payloadType, unb64(env.payload)));
      await Deno.writeFile(`${dir}/sig.bin`, unb64(env.signatures[0].sig));
      const verify = ["pkeyutl", "-verify", "-pubin", "-inkey", "key.pem", "-rawin", "-in", "pae.bin"];
      const ok = await run("openssl", [...verify, "-sigfile", "sig.bin"], dir);
      assert.equal(ok.code, 0, ok.stdout + ok.stderr);
      assert.match(ok.stdout, /Signature Verified Successfully/);
      const paeBytes = await Deno.readFile(`${dir}/pae.bin`);
      paeBytes[paeBytes.length - 10]! ^= 1;
      await Deno.writeFile(`${dir}/pae2.bin`, paeBytes);
      const bad = await run("openssl", [...verify.slice(0, -1), "pae2.bin", "-sigfile", "sig.bin"], dir);
      assert.notEqual(bad.code, 0, "a flipped byte fails");
      // keyid = SHA-256 of the DER SubjectPublicKeyInfo.
      const der = await run("openssl", [
        "pkey",
        "-pubin",
        "-in",
        "key.pem",
        "-outform",
        "DER",
        "-out",
        "k.der",
      ], dir);
      assert.equal(der.code, 0, der.stderr);
      const dgst = await run("openssl", ["dgst", "-sha256", "-r", "k.der"], dir);
      assert.equal(dgst.stdout.split(" ")[0], key.keyId);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

dbTest("rotation keeps old keys; a report frozen before signing is signed when first asked", async (db) => {
  const first = await testServices(db, fixtureModules());
  const oldId = await finishedRun(first.app, first.auth);
  const oldEnv = (await get(first.app, `/api/test-runs/${oldId}/report.dsse.json`, first.auth)).bytes;

  // A report frozen before signing existed: finished without the HTTP route, so no signature yet.
  const runs = first.svc.runs;
  const legacy = await runs.start({ planIdentifier: PLAN });
  await runs.finish(legacy.executionId, { outcome: "passed", results: { latencySamplesMs: [1, 2] } });
  const frozen = await runs.report(legacy.executionId);
  const count = async () =>
    Number(
      (await db.kysely.selectFrom("report_signatures").select((e) => e.fn.countAll().as("n"))
        .where("execution_id", "=", legacy.executionId).executeTakeFirstOrThrow()).n,
    );
  assert.equal(await count(), 0);

  // Rotate: a new instance with a new key.
  const second = await testServices(db, fixtureModules(), {
    DUT_REPORT_SIGNING_KEY: await generateSigningKey(),
  });
  const { keys } = await (await second.app.request("/api/report-keys")).json();
  assert.equal(keys.length, 2);
  assert.equal(keys[0].keyId, first.svc.signatures.key.keyId);
  assert.equal(keys[0].current, false);
  assert.ok(keys[0].validUntil !== null, "the old key's validity ended at the rotation");
  assert.equal(keys[1].keyId, second.svc.signatures.key.keyId);
  assert.equal(keys[1].validUntil, null);

  // The old report keeps its envelope and key.
  const oldAgain = await get(second.app, `/api/test-runs/${oldId}/report.dsse.json`, second.auth);
  assert.deepEqual(oldAgain.bytes, oldEnv);
  assert.equal(oldAgain.res.headers.get("x-report-signature-key"), keys[0].keyId);
  // …and still verifies with the key list served after the rotation.
  const listed = await loadKeys(JSON.stringify({ keys }));
  const oldReport = (await get(second.app, `/api/test-runs/${oldId}/report.json`, second.auth)).bytes;
  const checked = await checkReport(JSON.parse(dec.decode(oldReport)));
  const verified = await checkEnvelope(JSON.parse(dec.decode(oldEnv)), listed, {
    bytes: oldReport,
    reportSha256: checked.reportSha256,
    stated: checked.reportSha256,
  });
  assert.equal(verified.signedBy, keys[0].keyId);
  assert.ok(verified.findings.every((f) => f.ok), JSON.stringify(verified.findings));
  // The legacy report is signed now, with the current key; its bytes do not change.
  const legacyJson = await get(second.app, `/api/test-runs/${legacy.executionId}/report.json`, second.auth);
  assert.equal(legacyJson.res.headers.get("x-report-signature-key"), keys[1].keyId);
  assert.equal(dec.decode(legacyJson.bytes), frozen.text);
  assert.equal(await count(), 1);

  // Signatures are append-only; keys are kept.
  await assert.rejects(
    () => sql`update report_signatures set envelope_json = '{}'`.execute(db.kysely),
    /append-only/,
  );
  await assert.rejects(() => sql`delete from report_signatures`.execute(db.kysely), /append-only/);
  await assert.rejects(
    () => sql`delete from report_signing_keys`.execute(db.kysely),
    /kept for verification/,
  );
  await assert.rejects(
    () => sql`update report_signing_keys set public_key_x = 'x'`.execute(db.kysely),
    /kept for verification/,
  );
  // The same key registered again (a restart) changes nothing.
  await second.svc.signatures.register();
  assert.equal((await second.svc.signatures.keys()).length, 2);
});

dbTest(
  "verify_report.ts from an empty directory with only the public key; one flipped byte is caught",
  async (db) => {
    const { app, auth } = await testServices(db, fixtureModules());
    const id = await finishedRun(app, auth);
    const dir = await Deno.makeTempDir({ prefix: "dutlab-verify-standalone-" });
    const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
    try {
      const base = `http://127.0.0.1:${server.addr.port}`;
      // Everything the customer has: the verifier served by the service, the public key, the two files.
      const tool = await fetch(`${base}/verify-report.ts`);
      assert.equal(tool.status, 200);
      assert.match(tool.headers.get("content-type") ?? "", /typescript/);
      const source = await tool.text();
      assert.ok(!/from\s+["'](\.|@dutlab|jsr:)/.test(source), "no workspace or relative imports");
      // Pinned npm packages (a subpath allowed) and Node built-ins only.
      for (const m of source.matchAll(/from\s+"([^"]+)"/g)) {
        assert.match(m[1]!, /^(npm:(@[^@/]+\/)?[^@]+@\d+\.\d+\.\d+(\/[^"]*)?|node:[a-z_/]+)$/);
      }
      await Deno.writeTextFile(`${dir}/verify_report.ts`, source);
      const { keys } = await (await fetch(`${base}/api/report-keys`)).json();
      await Deno.writeTextFile(`${dir}/key.pem`, keys[0].publicKeyPem);
      const report = (await get(app, `/api/test-runs/${id}/report.json`, auth)).bytes;
      const envelope = (await get(app, `/api/test-runs/${id}/report.dsse.json`, auth)).bytes;
      await Deno.writeFile(`${dir}/report.json`, report);
      await Deno.writeFile(`${dir}/report.dsse.json`, envelope);
      const verify = (...args: string[]) =>
        run(Deno.execPath(), ["run", "-A", "verify_report.ts", ...args], dir);

      const ok = await verify("report.json", "--envelope", "report.dsse.json", "--key", "key.pem");
      assert.equal(ok.code, 0, ok.stdout + ok.stderr);
      assert.match(ok.stdout, new RegExp(`^OK reportSha256 [0-9a-f]{64} signed by ${keys[0].keyId}$`, "m"));
      const fromEnvelope = await verify(
        "report.dsse.json",
        "--report",
        "report.json",
        "--key",
        `${base}/api/report-keys`,
      );
      assert.equal(fromEnvelope.code, 0, fromEnvelope.stdout + fromEnvelope.stderr);
      const noKey = await verify("report.json", "--envelope", "report.dsse.json");
      assert.equal(noKey.code, 0);
      assert.match(noKey.stdout, /signature: NOT CHECKED/);

      // Another key does not verify it.
      const other = await testServices(db, fixtureModules(), {
        DUT_REPORT_SIGNING_KEY: await generateSigningKey(),
      });
      await Deno.writeTextFile(`${dir}/other.pem`, other.svc.signatures.key.publicKey.publicKeyPem);
      const wrongKey = await verify("report.json", "--envelope", "report.dsse.json", "--key", "other.pem");
      assert.equal(wrongKey.code, 1, wrongKey.stdout);
      assert.match(wrongKey.stdout, /MISMATCH {2}Ed25519 signature/);

      // One flipped byte anywhere: in the report (even in white space the canonical hash ignores)…
      const flips: Array<[string, Uint8Array, number]> = [
        ["report.json", report, report.indexOf(0x22, 200)], // a quote inside the content
        ["report.json", report, report.indexOf(0x0a) + 1], // indentation white space
        ["report.dsse.json", envelope, dec.decode(envelope).indexOf('"payload":"') + 40], // the payload
        ["report.dsse.json", envelope, dec.decode(envelope).indexOf('"sig":"') + 10], // the signature
      ];
      for (const [name, bytes, at] of flips) {
        const copy = bytes.slice();
        copy[at] = copy[at] === 0x41 ? 0x42 : copy[at] === 0x20 ? 0x09 : 0x41;
        await Deno.writeFile(`${dir}/${name}`, copy);
        const r = await verify("report.json", "--envelope", "report.dsse.json", "--key", "key.pem");
        assert.equal(r.code, 1, `${name} byte ${at}: ${r.stdout}${r.stderr}`);
        assert.match(r.stdout, /^FAILED: /m);
        await Deno.writeFile(`${dir}/${name}`, bytes);
      }
    } finally {
      await server.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
);

dbTest("the finish response is unchanged and the share route still works with signatures", async (db) => {
  const { app, auth } = await testServices(db, fixtureModules());
  const id = await finishedRun(app, auth);
  const share = await app.request(`/api/test-runs/${id}/share`, jsonReq("POST", undefined, auth));
  assert.equal(share.status, 200);
  const { url } = await share.json();
  const page = await app.request(new URL(url).pathname + new URL(url).search);
  assert.equal(page.status, 200);
  const html = await page.text();
  const { keys } = await (await app.request("/api/report-keys")).json();
  assert.ok(html.includes(keys[0].keyId), "the cover prints the signing key fingerprint");
  assert.ok(html.includes("http://localhost/verify-report.ts"), "the note names the verifier's URL");
});

Deno.test("deno task rotate-signing-key replaces the embedded key and keeps the old one listed", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dutlab-rotate-signing-" });
  const root = new URL("../../", import.meta.url).pathname;
  const rotate = async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "tools/rotate_signing_key.ts"],
      cwd: root,
      env: { NO_COLOR: "1", DUT_DATA_DIR: dir, DATABASE_URL: "", DUT_REPORT_SIGNING_KEY: "" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = dec.decode(out.stdout) + dec.decode(out.stderr);
    assert.equal(out.code, 0, text);
    return { text, key: JSON.parse(await Deno.readTextFile(`${dir}/secrets.json`)).reportSigningKey };
  };
  try {
    const a = await rotate();
    assert.match(a.text, /Reports are now signed with key [0-9a-f]{64}; 1 key\(s\) listed/);
    const b = await rotate();
    assert.notEqual(b.key, a.key);
    assert.match(b.text, /2 key\(s\) listed/);
    assert.ok(!b.text.includes(b.key) && !b.text.includes(a.key), "the private key is never printed here");
    assert.equal((await Deno.stat(`${dir}/secrets.json`)).mode! & 0o777, 0o600);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
