import assert from "node:assert/strict";
import { createTarGzip } from "nanotar";
import { checkManifest, readBundleArchive } from "./evidence_read.ts";
import { sha256Hex } from "../util/hash.ts";

const enc = new TextEncoder();

Deno.test("readBundleArchive takes the top folder off every path and skips directories", async () => {
  const bytes = await createTarGzip([
    { name: "evidence-12345678/" },
    { name: "evidence-12345678/report.json", data: enc.encode("{}") },
    { name: "evidence-12345678/payloads/ab.json", data: enc.encode("[]") },
  ]);
  const files = await readBundleArchive(bytes);
  assert.deepEqual([...files.keys()].sort(), ["payloads/ab.json", "report.json"]);
});

Deno.test("checkManifest names a changed, a missing and an unlisted file", async () => {
  const a = enc.encode("a");
  const b = enc.encode("b");
  const files = new Map<string, Uint8Array>([
    ["a.txt", a],
    ["b.txt", enc.encode("changed")],
    ["extra.txt", b],
    [
      "SHA256SUMS",
      enc.encode(
        `${await sha256Hex(a)}  a.txt\n${await sha256Hex(b)}  b.txt\n${await sha256Hex(b)}  gone.txt\n`,
      ),
    ],
  ]);
  const bad = (await checkManifest(files)).filter((f) => !f.ok).map((f) => `${f.path}: ${f.detail}`);
  assert.equal(bad.length, 3, bad.join("\n"));
  assert.match(bad[0]!, /^b\.txt: listed [0-9a-f]{64}, file hashes to [0-9a-f]{64}$/);
  assert.equal(bad[1], "gone.txt: listed but missing");
  assert.equal(bad[2], "extra.txt: not listed in the manifest");
  assert.deepEqual(await checkManifest(new Map()), [{ path: "SHA256SUMS", ok: false, detail: "missing" }]);
});
