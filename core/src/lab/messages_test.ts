import assert from "node:assert/strict";
import { z } from "@hono/zod-openapi";
import { LabFile } from "./file.ts";
import { labIssueField, labIssueMessage } from "./messages.ts";

/** A lab request as the plan route takes it (its other members left out). */
const Request = z.object({ lab: LabFile, secrets: z.record(z.string(), z.string()) }).strict();

const lab = (over: Record<string, unknown> = {}) => ({
  apiVersion: "dutlab/v1",
  kind: "Lab",
  metadata: { name: "lab1" },
  devices: [{ hostname: "fw-1" }],
  ...over,
});

/** Each case: a request, and the field and message of each of its errors, as the routes name them. */
const CASES: Array<[string, unknown, Array<[string, string]>]> = [
  ["nothing sent", {}, [
    ["lab", "is required: a lab file (an object with apiVersion, kind, metadata and devices)"],
    [
      "secrets",
      "is required: an object giving each credential's password by its name ({} when the file names no credential)",
    ],
  ]],
  ["wrong types", { lab: lab({ devices: {}, credentials: [] }), secrets: [] }, [
    ["$.credentials", "must be an object of credentials by name, not a list"],
    ["$.devices", "must be a list of devices, not an object"],
    [
      "secrets",
      "must be an object giving each credential's password by its name ({} when the file names no credential), not a list",
    ],
  ]],
  ["values and unknown fields", {
    lab: lab({
      apiVersion: "v2",
      metadata: {},
      devices: [{ hostname: "fw-1", tlsVerifyMode: "x", tags: "a" }],
    }),
    secrets: {},
    extra: 1,
  }, [
    ["$.apiVersion", 'must be "dutlab/v1"'],
    ["$.metadata.name", "is required: a string"],
    ["$.devices[0].tlsVerifyMode", 'must be one of "strict", "self-signed" or "insecure"'],
    ["$.devices[0].tags", "must be a list of tags, not a string"],
    ["body", 'has no field "extra"'],
  ]],
  ["a device's unknown field, a credential's name and type", {
    lab: lab({
      credentials: { "-x": { username: "u", password: "env:P" }, ok: 5 },
      devices: [{ hostname: "fw-1", port: 1, enabled: "yes" }],
    }),
    secrets: {},
  }, [
    [
      '$.credentials["-x"]',
      "is not a valid name: must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
    ],
    ["$.credentials.ok", "must be a credential (an object with username and password), not a number"],
    ["$.devices[0].enabled", "must be true or false, not a string"],
    ["$.devices[0]", 'has no field "port" (GET /api/lab.schema.json lists the fields)'],
  ]],
  ["a schema's own messages are kept", {
    lab: lab({ devices: [{ hostname: "fw-1", pollIntervalSeconds: 5 }] }),
    secrets: {},
  }, [["$.devices[0].pollIntervalSeconds", "must be at least 30"]]],
];

for (const [name, body, expected] of CASES) {
  Deno.test(`lab request errors in plain words: ${name}`, () => {
    const r = Request.safeParse(body);
    assert.equal(r.success, false);
    const got = r.error!.issues.map((i) => [labIssueField(i), labIssueMessage(i)]);
    assert.deepEqual(got, expected);
    for (const [, message] of got) assert.doesNotMatch(message!, /Invalid input|expected \w+, received/);
  });
}
