// The outside judge (issue 50): the local NetBox peer's answers and dutlab's requests validated with Ajv against
// NetBox's own published OpenAPI document (the excerpt in testdata/netbox-openapi, SOURCE.md): a device list
// page against the device schema, the journal entry dutlab posts against JournalEntryRequest and the peer's
// answer against JournalEntry. The devices are pynetbox's recorded device (testdata/pynetbox) as the peer
// serves it.
import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- test-only: kept out of deno.json and deno.lock (tests/lockfiles_test.ts)
import { Ajv2020 } from "npm:ajv@8.20.0/dist/2020.js";
// deno-lint-ignore no-import-prefix -- test-only, as above
import addFormatsModule from "npm:ajv-formats@3.0.1";
import { NetBoxClient } from "./client.ts";
import { journalComment, journalEntryBody } from "./journal.ts";
import { generatedDevices, PEER_TOKEN, startNetBoxPeer } from "../../../tools/netbox_peer.ts";

const addFormats = addFormatsModule as unknown as (a: unknown) => void;
const doc = JSON.parse(
  await Deno.readTextFile(new URL("./testdata/netbox-openapi/openapi-excerpt.json", import.meta.url)),
) as { info: { version: string }; components: { schemas: Record<string, unknown> } };

/** OpenAPI 3.0 → JSON Schema 2020-12: boolean exclusive bounds become numbers; Brief and Nested refs objects. */
function toJsonSchema(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(toJsonSchema);
  if (s === null || typeof s !== "object") return s;
  const o = { ...(s as Record<string, unknown>) };
  if (typeof o.$ref === "string") {
    const name = o.$ref.split("/").pop()!;
    return name in doc.components.schemas ? { $ref: `#/$defs/${name}` } : { type: "object" };
  }
  if (o.exclusiveMaximum === true) [o.exclusiveMaximum, o.maximum] = [o.maximum, undefined];
  if (o.exclusiveMinimum === true) [o.exclusiveMinimum, o.minimum] = [o.minimum, undefined];
  const nullable = o.nullable === true;
  delete o.nullable;
  if (nullable && typeof o.type === "string") o.type = [o.type, "null"];
  if (nullable && Array.isArray(o.enum) && !o.enum.includes(null)) o.enum = [...o.enum, null];
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  const out = Object.fromEntries(Object.entries(o).map(([k, v]) => [k, k === "enum" ? v : toJsonSchema(v)]));
  // A nullable reference (allOf: [$ref], nullable): the object, or null.
  return nullable && out.allOf ? { anyOf: [{ allOf: out.allOf }, { type: "null" }] } : out;
}

function validator(name: string) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  const $defs = Object.fromEntries(
    Object.entries(doc.components.schemas).map(([k, v]) => [k, toJsonSchema(v)]),
  );
  const v = ajv.compile({ $defs, $ref: `#/$defs/${name}` });
  return (value: unknown) => {
    const ok = v(value);
    return ok
      ? []
      : (v.errors ?? []).map((e: { instancePath: string; message?: string }) =>
        `${e.instancePath} ${e.message}`
      );
  };
}

Deno.test("the excerpt is NetBox's document: version, license, the schemas used", () => {
  assert.equal(doc.info.version, "4.7.0-beta1");
  for (const s of ["Device", "JournalEntry", "JournalEntryRequest"]) assert.ok(s in doc.components.schemas);
});

Deno.test("the peer's device answers validate against NetBox's Device schema; a wrong one does not", async () => {
  const peer = await startNetBoxPeer({ devices: generatedDevices(25) });
  try {
    const c = new NetBoxClient({ url: peer.url, token: PEER_TOKEN, pageSize: 10 });
    const list = await c.list<Record<string, unknown>>("api/dcim/devices/", [["site", "lab-a"]], "devices");
    const device = validator("Device");
    for (const d of list.results) assert.deepEqual(device(d), [], `device ${d.id}`);
    // The judge can fail: pynetbox's older status (a boolean value) and a missing required member.
    assert.notDeepEqual(device({ ...list.results[0], status: { value: true, label: "Active" } }), []);
    const { display_url: _, ...missing } = list.results[0]!;
    assert.match(device(missing).join(), /display_url/);
  } finally {
    await peer.close();
  }
});

Deno.test("the journal entry dutlab posts is a valid JournalEntryRequest; the peer's answer a JournalEntry", async () => {
  const peer = await startNetBoxPeer({ devices: generatedDevices(2) });
  const posted: unknown[] = [];
  const recording: typeof fetch = async (input, init) => {
    if (init?.method === "POST") posted.push(JSON.parse(String(init.body)));
    return await fetch(input, init);
  };
  try {
    const c = new NetBoxClient({ url: peer.url, token: PEER_TOKEN, fetch: recording });
    const run = {
      executionId: "run-1",
      verdict: "pass",
      outcome: "passed",
      reportUrl: "http://127.0.0.1:8080/api/test-runs/run-1/report.json",
      reportSha256: "0".repeat(64),
      dsseDigest: `sha256:${"1".repeat(64)}`,
      devices: [],
    };
    const body = journalEntryBody(1, run.verdict, journalComment(run));
    const r = await c.request("POST", c.url("api/extras/journal-entries/"), "journal entry", body);
    assert.equal(r.status, 201);
    assert.deepEqual(validator("JournalEntryRequest")(posted[0]), []);
    assert.deepEqual(validator("JournalEntry")(r.json), []);
    assert.notDeepEqual(
      validator("JournalEntryRequest")({ ...body, kind: "verdict" }),
      [],
      "the judge can fail",
    );
  } finally {
    await peer.close();
  }
});
