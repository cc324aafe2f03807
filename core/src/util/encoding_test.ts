import assert from "node:assert/strict";
import { base64, base64url, fromBase64, fromBase64url } from "./encoding.ts";

// Reference encodings from RFC 4648 section 10, plus bytes that hit the two alphabets' differing characters.
const VECTORS: Array<[string, string]> = [
  ["", ""],
  ["f", "Zg"],
  ["fo", "Zm8"],
  ["foo", "Zm9v"],
  ["foob", "Zm9vYg"],
  ["fooba", "Zm9vYmE"],
  ["foobar", "Zm9vYmFy"],
];

Deno.test("base64url encodes the RFC 4648 vectors without padding and decodes them back", () => {
  for (const [plain, encoded] of VECTORS) {
    const bytes = new TextEncoder().encode(plain);
    assert.equal(base64url(bytes), encoded);
    assert.deepEqual(fromBase64url(encoded), bytes);
  }
});

Deno.test("base64url uses - and _ where base64 uses + and /", () => {
  const bytes = new Uint8Array([250, 251, 255, 62, 63]);
  assert.equal(base64url(bytes), "-vv_Pj8");
  assert.equal(base64(bytes), "+vv/Pj8=");
  assert.deepEqual(fromBase64url("-vv_Pj8"), bytes);
  assert.deepEqual(fromBase64url("-vv_Pj8="), bytes, "padding is optional");
  assert.deepEqual(fromBase64("+vv/\nPj8="), bytes, "whitespace inside a PEM body is skipped");
});

Deno.test("base64url round-trips every byte value and a buffer too long for String.fromCharCode(...)", () => {
  const all = Uint8Array.from({ length: 256 }, (_, i) => i);
  assert.deepEqual(fromBase64url(base64url(all)), all);
  assert.deepEqual(fromBase64(base64(all)), all);
  const big = new Uint8Array(300_000).map((_, i) => (i * 31) & 0xff);
  assert.deepEqual(fromBase64url(base64url(big)), big);
});

Deno.test("decoding refuses characters outside the alphabet", () => {
  assert.throws(() => fromBase64url("+vv/"), SyntaxError);
  assert.throws(() => fromBase64url("ab$c"), SyntaxError);
  assert.throws(() => fromBase64("-vv_"), SyntaxError);
});
