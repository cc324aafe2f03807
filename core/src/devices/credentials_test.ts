import assert from "node:assert/strict";
import {
  CredentialError,
  decryptSecret,
  encryptSecret,
  importCredentialKey,
  keyIdOf,
  timingSafeEqual,
} from "./credentials.ts";

const K1 = "11".repeat(32);
const K2 = "22".repeat(32);
const DEV_A = "6b0c3f1e-3f2a-4d52-9d1e-000000000001";
const DEV_B = "6b0c3f1e-3f2a-4d52-9d1e-000000000002";

Deno.test("credentials round-trip with AES-256-GCM and a fresh nonce each time", async () => {
  const k = await importCredentialKey(K1);
  const a = await encryptSecret(k, DEV_A, "s3cret!");
  const b = await encryptSecret(k, DEV_A, "s3cret!");
  assert.notEqual(a, b, "fresh nonce per encryption");
  assert.match(a, /^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
  assert.ok(!a.includes("s3cret"));
  assert.equal(await decryptSecret([k], DEV_A, a), "s3cret!");
  assert.equal(keyIdOf(a), k.id);
});

Deno.test("a ciphertext moved to another device does not decrypt", async () => {
  const k = await importCredentialKey(K1);
  const a = await encryptSecret(k, DEV_A, "s3cret!");
  await assert.rejects(() => decryptSecret([k], DEV_B, a), (e: unknown) => {
    assert.ok(e instanceof CredentialError);
    assert.ok(!(e as Error).message.includes("s3cret"));
    return true;
  });
});

Deno.test("the key id selects the key; an unknown key is a clear error", async () => {
  const k1 = await importCredentialKey(K1);
  const k2 = await importCredentialKey(K2);
  const old = await encryptSecret(k1, DEV_A, "pw");
  assert.equal(await decryptSecret([k2, k1], DEV_A, old), "pw");
  await assert.rejects(
    () => decryptSecret([k2], DEV_A, old),
    /encrypted with key [0-9a-f]{8}, which is not configured/,
  );
});

Deno.test("a credential encrypted elsewhere with AES-256-GCM decrypts; a changed tag or a cut ciphertext does not", async () => {
  // Made outside this code base with Python's `cryptography` 48.0 (AESGCM(key).encrypt(nonce, "p@ss wörd",
  // device id)), key 0x11 × 32, nonce 00 01 … 0b; Node's createCipheriv gives the same bytes.
  const k = await importCredentialKey(K1);
  const stored = `v1.${k.id}.AAECAwQFBgcICQoL.Y6PFYFvU9kJm3BpmBPoGGrufODtog_hwc14`;
  assert.equal(k.id, "02d449a3");
  assert.equal(await decryptSecret([k], DEV_A, stored), "p@ss wörd");
  const refused = (e: unknown) => e instanceof CredentialError && /does not decrypt/.test(e.message);
  // One character of the tag changed (the last one may carry only unused bits of base64).
  await assert.rejects(() => decryptSecret([k], DEV_A, stored.slice(0, -3) + "X14"), refused);
  await assert.rejects(() => decryptSecret([k], DEV_A, stored.slice(0, -8)), refused);
  await assert.rejects(() => decryptSecret([k], DEV_A, `v1.${k.id}.AAECAwQFBgcICQoL.AAEC`), refused);
  // And what crypto.subtle encrypts (encryptSecret) round-trips through it, long secrets included.
  const long = "x".repeat(5000) + "é";
  assert.equal(await decryptSecret([k], DEV_A, await encryptSecret(k, DEV_A, long)), long);
});

Deno.test("token comparison is exact", () => {
  assert.equal(timingSafeEqual("abc", "abc"), true);
  assert.equal(timingSafeEqual("abc", "abd"), false);
  assert.equal(timingSafeEqual("abc", "abcd"), false);
  assert.equal(timingSafeEqual("", ""), true);
});
