import assert from "node:assert/strict";
import { reportFixture } from "../../harness/report_fixture.ts";
import {
  generateSigningKey,
  pae,
  PAYLOAD_TYPE,
  PREDICATE_TYPE,
  ReportSigningKey,
  reportStatement,
  signReport,
  STATEMENT_TYPE,
} from "./sign.ts";
import { canonicalJson, sha256Hex } from "../util/hash.ts";

const dec = new TextDecoder();
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

Deno.test("PAE matches the DSSE v1 test vector", () => {
  const out = pae("http://example.com/HelloWorld", new TextEncoder().encode("hello world"));
  assert.equal(dec.decode(out), "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  // LEN counts bytes, not characters.
  assert.equal(dec.decode(pae("t", new TextEncoder().encode("é"))), "DSSEv1 1 t 2 é");
});

Deno.test("a generated key round-trips; keyid is the SHA-256 of the SPKI DER", async () => {
  const text = await generateSigningKey();
  const key = await ReportSigningKey.fromText(text);
  const spki = unb64(key.publicKey.publicKeyPem.replace(/-----[A-Z ]+-----|\s/g, ""));
  assert.equal(spki.length, 44);
  assert.equal(key.keyId, await sha256Hex(spki));
  assert.equal(key.publicKey.publicKeyJwk.kid, key.keyId);
  const pemKey = await ReportSigningKey.fromText(
    `-----BEGIN PRIVATE KEY-----\n${text}\n-----END PRIVATE KEY-----\n`,
  );
  assert.equal(pemKey.keyId, key.keyId);
  await assert.rejects(() => ReportSigningKey.fromText("bm90IGEga2V5"), /not an Ed25519 private key/);
});

Deno.test("the envelope carries an in-toto Statement v1 over both report digests, signed over PAE", async () => {
  const report = await reportFixture();
  const text = JSON.stringify(report, null, 2) + "\n";
  const key = await ReportSigningKey.fromText(await generateSigningKey());
  const envText = await signReport(key, text);
  const env = JSON.parse(envText);
  assert.equal(env.payloadType, PAYLOAD_TYPE);
  assert.equal(env.signatures.length, 1);
  assert.equal(env.signatures[0].keyid, key.keyId);
  const payload = unb64(env.payload);
  const st = JSON.parse(dec.decode(payload));
  assert.equal(st._type, STATEMENT_TYPE);
  assert.equal(st.predicateType, PREDICATE_TYPE);
  const id = report.meta.executionId;
  assert.deepEqual(st.subject, [
    { name: `report-${id}.canonical.json`, digest: { sha256: report.reportSha256 } },
    { name: `report-${id}.json`, digest: { sha256: await sha256Hex(text) } },
  ]);
  // The payload is the canonical JSON of the Statement.
  assert.equal(dec.decode(payload), canonicalJson(st));
  const pub = await crypto.subtle.importKey(
    "jwk",
    { kty: "OKP", crv: "Ed25519", x: key.publicKey.publicKeyJwk.x },
    { name: "Ed25519" },
    false,
    ["verify"],
  );
  const sig = unb64(env.signatures[0].sig);
  assert.ok(await crypto.subtle.verify({ name: "Ed25519" }, pub, sig, pae(PAYLOAD_TYPE, payload)));
  const flipped = pae(PAYLOAD_TYPE, payload);
  flipped[flipped.length - 3]! ^= 1;
  assert.ok(!(await crypto.subtle.verify({ name: "Ed25519" }, pub, sig, flipped)));
  // Ed25519 is deterministic: the same report signs to the same envelope.
  assert.equal(await signReport(key, text), envText);
});

Deno.test("a report whose reportSha256 does not match its content is never signed", async () => {
  const report = await reportFixture();
  const text = JSON.stringify({ ...report, meta: { ...report.meta, notes: "edited" } });
  await assert.rejects(() => reportStatement(text), /reportSha256 does not match/);
});

Deno.test("a key made with the documented openssl line is accepted (docs/deploy-postgres.md)", async () => {
  const out = await new Deno.Command("bash", {
    args: ["-c", "openssl genpkey -algorithm ed25519 -outform DER | base64 -w0"],
    stdout: "piped",
  }).output();
  assert.equal(out.code, 0);
  const key = await ReportSigningKey.fromText(new TextDecoder().decode(out.stdout));
  assert.match(key.keyId, /^[0-9a-f]{64}$/);
});
