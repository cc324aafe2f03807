/**
 * Hostile input (issue 15): NUL characters, lone surrogates, huge or non-finite numbers and deep nesting
 * anywhere in a request are refused with 400 problem+json naming the field, before the database sees
 * them; and a property-based fuzz test over every route of the served OpenAPI document (read at run time,
 * so routes added later are covered) finds no 5xx, with refused requests changing no stored data.
 */
import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- test-only: kept out of deno.json and deno.lock (tests/gate/lockfiles_test.ts)
import fc from "npm:fast-check@4.10.2";
import { sql } from "kysely";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { dbTest } from "../../core/harness/db.ts";
import { TEST_ADMIN_TOKEN, testServices } from "../../core/harness/app.ts";
import type { Db } from "../../core/harness/core.ts";
import { INPUT_LIMITS } from "../../core/harness/core.ts";
import { modules } from "../../modules.gen.ts";
import { closedPort } from "../../core/harness/poller_lab.ts";
import { enabledVendors } from "../../core/harness/lab.ts";

const auth = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
/** Marks a number JSON.stringify cannot write: replaced by an overflowing literal in the request text. */
const OVERFLOW = "\u{1F4A5}1e400";

function env() {
  return { DUT_DEVICE_CONNECT_TIMEOUT_MS: "500", DUT_DEVICE_REQUEST_TIMEOUT_MS: "1000" };
}

/** The stored data, as one comparable fingerprint per table. */
async function fingerprint(db: Db): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (
    const t of ["devices", "snapshots", "snapshot_payloads", "snapshot_latest", "test_runs", "run_alerts"]
  ) {
    const r = await sql<{ n: number; h: string }>`select count(*)::int as n,
      md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from ${sql.table(t)} x`.execute(
      db.kysely,
    );
    out[t] = `${r.rows[0]!.n}:${r.rows[0]!.h}`;
  }
  return out;
}

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

async function send(app: OpenAPIHono, method: string, path: string, body?: unknown) {
  const text = body === undefined ? undefined : JSON.stringify(body).replaceAll(`"${OVERFLOW}"`, "1e400");
  const r = await app.request(path, {
    method,
    headers: { ...auth, ...(text === undefined ? {} : { "content-type": "application/json" }) },
    body: text,
  });
  const ct = r.headers.get("content-type") ?? "";
  const json = ct.includes("json") ? await r.json() : await r.text();
  return { status: r.status, ct, json };
}

/** Any enabled vendor: the device answers on a closed port, the inputs are refused before any adapter runs. */
const VENDOR = enabledVendors(modules)[0]!;

async function lab(db: Db) {
  const { app } = await testServices(db, modules, env());
  const port = closedPort();
  const dev = await send(app, "POST", "/api/admin/dut/devices", {
    hostname: "fw-1",
    vendor: VENDOR,
    baseUrl: `https://127.0.0.1:${port}`,
    username: "admin",
    password: "secret-password",
  });
  assert.equal(dev.status, 201, JSON.stringify(dev.json));
  const plans = await send(app, "GET", "/api/test-runs/plans");
  const plan = (plans.json as { plans: Array<{ identifier: string }> }).plans[0]!.identifier;
  return { app, port, deviceId: (dev.json as { deviceId: string }).deviceId, plan };
}

const k6 = (trend: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  k6Summary: {
    metrics: {
      http_req_duration: {
        avg: 10,
        min: 1,
        med: 9,
        max: 90,
        "p(90)": 20,
        "p(95)": 30,
        "p(99)": 50,
        ...trend,
      },
      http_reqs: { count: 1000, rate: 100 },
      http_req_failed: { passes: 0, fails: 1000, value: 0 },
      ...extra,
    },
  },
});

dbTest("the issue's hostile inputs are refused with 400 naming the field, and store nothing", async (db) => {
  const { app, deviceId, plan, port } = await lab(db);
  const run = await send(app, "POST", "/api/test-runs", { planIdentifier: plan });
  assert.equal(run.status, 201, JSON.stringify(run.json));
  const exec = (run.json as { executionId: string }).executionId;
  const device = (patch: Record<string, unknown>) => ({
    hostname: "fw-2",
    vendor: VENDOR,
    baseUrl: `https://127.0.0.1:${port}`,
    username: "admin",
    password: "secret-password",
    ...patch,
  });
  const cases: Array<[string, string, unknown, string, RegExp]> = [
    ["POST", "/api/admin/dut/devices", device({ username: "ad\u0000min" }), "username", /NUL/],
    ["POST", "/api/admin/dut/devices", device({ notes: "a\u0000" }), "notes", /NUL/],
    [
      "POST",
      "/api/admin/dut/devices",
      device({ baseUrl: `https://127.0.0.1:${port}/a\u0000` }),
      "baseUrl",
      /NUL/,
    ],
    ["POST", "/api/admin/dut/devices", device({ username: "ad\uD800min" }), "username", /surrogate/],
    ["PATCH", `/api/admin/dut/devices/${deviceId}`, { notes: "x\uDC00" }, "notes", /surrogate/],
    ["PATCH", `/api/admin/dut/devices/${deviceId}`, { password: "p\u0000" }, "password", /NUL/],
    ["POST", "/api/test-runs/preflight", { planIdentifier: "a\u0000" }, "planIdentifier", /NUL/],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: { latencySamplesMs: [1e308] },
      },
      "results",
      /./,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: { latencySamplesMs: [1e306, 1e306] },
      },
      "results",
      /./,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      { outcome: "passed", results: k6({ avg: 1e308 }) },
      "results",
      /./,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      { outcome: "passed", results: k6({ "p(99)": 1e308 }) },
      "results",
      /./,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: k6({}, { custom: { note: "a\u0000b" } }),
      },
      "results.k6Summary.metrics.custom.note",
      /NUL/,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: k6({}, { custom: { note: "\uD83D" } }),
      },
      "results.k6Summary.metrics.custom.note",
      /surrogate/,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: k6({}, { custom: { value: OVERFLOW } }),
      },
      "results.k6Summary.metrics.custom.value",
      /finite/,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: k6({}, { custom: { value: 1e300 } }),
      },
      "results.k6Summary.metrics.custom.value",
      /magnitude/,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: k6({}, { custom: nested(3000) }),
      },
      "results.k6Summary.metrics.custom",
      /deeper than/,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: k6({}, { ["bad\u0000name"]: 1 }),
      },
      "results.k6Summary.metrics.bad\u0000name",
      /member name/,
    ],
    [
      "POST",
      `/api/test-runs/${exec}/finish`,
      {
        outcome: "passed",
        results: k6({}, { custom: { big: "x".repeat(300 * 1024) } }),
      },
      "results",
      /bytes of JSON/,
    ],
  ];
  const before = await fingerprint(db);
  for (const [method, path, body, field, msg] of cases) {
    const r = await send(app, method, path, body);
    const what = `${method} ${path} ${JSON.stringify(body).slice(0, 200)}`;
    assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.json).slice(0, 500)}`);
    assert.equal(r.ct, "application/problem+json", what);
    const errors = (r.json as { errors: Array<{ field: string; message: string }> }).errors;
    const hit = errors.find((e) => e.field === field || e.field.startsWith(`${field}.`));
    assert.ok(hit, `${what}: ${JSON.stringify(errors).slice(0, 300)} names ${field}`);
    assert.match(hit.message, msg, what);
  }
  assert.deepEqual(await fingerprint(db), before, "refused requests stored nothing");
  // Bytes that are not UTF-8 are refused, not decoded to U+FFFD.
  const raw = new Uint8Array([
    ...new TextEncoder().encode('{"notes":"a'),
    0xff,
    0xfe,
    ...new TextEncoder().encode('"}'),
  ]);
  const bad = await app.request(`/api/admin/dut/devices/${deviceId}`, {
    method: "PATCH",
    headers: { ...auth, "content-type": "application/json" },
    body: raw,
  });
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).detail, /UTF-8/);
  // Query strings and path parameters obey the same rule.
  const q = await send(app, "GET", "/api/admin/dut/snapshots?endpointLabel=a%00b");
  assert.equal(q.status, 400);
  const p = await send(app, "DELETE", "/api/admin/dut/devices/a%00b");
  assert.ok(p.status === 400 || p.status === 404, String(p.status));
  // Within the limits, the same requests succeed and are stored exactly.
  const ok = await send(
    app,
    "POST",
    "/api/admin/dut/devices",
    device({ notes: "d\u00e9j\u00e0 \u{1F600} ok" }),
  );
  assert.equal(ok.status, 201);
  const fin = await send(app, "POST", `/api/test-runs/${exec}/finish`, {
    outcome: "passed",
    results: k6({ avg: 86_400_000, max: 86_400_000 }, { custom: nested(INPUT_LIMITS.maxDepth - 5) }),
  });
  assert.equal(fin.status, 200, JSON.stringify(fin.json).slice(0, 500));
});

// ---------------------------------------------------------------- the fuzz test over the OpenAPI document

type Schema = Record<string, unknown>;
interface Doc {
  paths: Record<
    string,
    Record<string, {
      parameters?: Schema[];
      requestBody?: { content: Record<string, Schema> };
      responses?: Record<string, { content?: Record<string, unknown> }>;
    }>
  >;
  components: { schemas: Record<string, Schema> };
}

const HOSTILE_STRINGS = ["\u0000", "a\u0000b", "\uD800", "x\uDFFFy", "\uDBFF\uDBFF", "../../etc/passwd", ""];
const hostileLeaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(...HOSTILE_STRINGS, 1e308, -1e308, OVERFLOW, -1, 2 ** 53, 1.5, null, true, [], {}),
  fc.integer({ min: 30, max: 3000 }).map(nested),
  fc.string({ unit: "binary", maxLength: 8 }),
);

/** A value for a JSON schema (from the served document), often valid, with known ids where they fit. */
function fromSchema(
  s: Schema,
  doc: Doc,
  known: Map<string, string[]>,
  name = "",
  depth = 0,
): fc.Arbitrary<unknown> {
  if (typeof s.$ref === "string") {
    return fromSchema(doc.components.schemas[s.$ref.split("/").pop()!]!, doc, known, name, depth);
  }
  const alts: fc.Arbitrary<unknown>[] = [];
  const k = known.get(name);
  if (k?.length) alts.push(...Array(4).fill(fc.constantFrom(...k)));
  if (Array.isArray(s.anyOf) || Array.isArray(s.oneOf)) {
    alts.push(...((s.anyOf ?? s.oneOf) as Schema[]).map((x) => fromSchema(x, doc, known, name, depth)));
    return fc.oneof(...alts);
  }
  if (Array.isArray(s.enum)) return fc.oneof(...alts, fc.constantFrom(...s.enum));
  const types = Array.isArray(s.type) ? s.type as string[] : [s.type ?? "any"];
  for (const t of types) {
    if (t === "string") {
      const max = Math.min(Number(s.maxLength ?? 40), 40);
      const min = Math.min(Number(s.minLength ?? 0), max);
      if (s.format === "uuid") alts.push(fc.uuid());
      else if (s.format === "date-time") {
        alts.push(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()));
      } else if (typeof s.pattern === "string") {
        // The schema's own length bounds, not the 40-character cap: a pattern of 64 hex digits (a plan hash)
        // never yields a string of at most 40, and a filter that never passes never returns.
        const lo = Number(s.minLength ?? 0);
        const hi = Number(s.maxLength ?? Infinity);
        alts.push(fc.stringMatching(new RegExp(s.pattern)).filter((x) => x.length >= lo && x.length <= hi));
      } else if (/url/i.test(name)) {
        alts.push(fc.constantFrom("https://127.0.0.1:1", "https://127.0.0.1:1/x?y=z"));
      } else alts.push(fc.string({ minLength: min, maxLength: max }));
    } else if (t === "integer") {
      alts.push(fc.integer({ min: Number(s.minimum ?? -1e6), max: Number(s.maximum ?? 1e6) }));
    } else if (t === "number") {
      alts.push(fc.double({ min: Number(s.minimum ?? -1e6), max: Number(s.maximum ?? 1e6), noNaN: true }));
    } else if (t === "boolean") alts.push(fc.boolean());
    else if (t === "null") alts.push(fc.constant(null));
    else if (t === "array" && depth < 6) {
      alts.push(fc.array(fromSchema((s.items ?? {}) as Schema, doc, known, name, depth + 1), {
        minLength: Number(s.minItems ?? 0),
        maxLength: Math.min(Number(s.maxItems ?? 4), 4),
      }));
    } else if (t === "object" && depth < 6) {
      const props = Object.entries((s.properties ?? {}) as Record<string, Schema>);
      const rec = fc.record(
        Object.fromEntries(props.map(([p, ps]) => [p, fromSchema(ps, doc, known, p, depth + 1)])),
        { requiredKeys: (s.required ?? []) as string[] },
      );
      alts.push(
        s.additionalProperties === false ? rec : fc.tuple(
          rec,
          fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }),
        ).map(([a, b]) => ({ ...b, ...a })),
      );
    } else if (t === "any") alts.push(fc.jsonValue({ maxDepth: 2 }));
  }
  return alts.length ? fc.oneof(...alts) : fc.constant(null);
}

/**
 * Make the `i`-th node (depth-first, modulo the node count) of `v` hostile: a string gets a NUL or a lone
 * surrogate inside, a number becomes huge or overflowing, an object gets an extra hostile member.
 */
function inject(v: unknown, i: number, leaf: unknown, extraKey: string): unknown {
  let count = 0;
  const countNodes = (x: unknown): void => {
    count++;
    if (Array.isArray(x)) x.forEach(countNodes);
    else if (x && typeof x === "object") Object.values(x).forEach(countNodes);
  };
  countNodes(v);
  const target = i % count;
  let n = 0;
  const walk = (x: unknown): unknown => {
    const here = n++ === target;
    if (here && typeof x === "string") {
      const bad = typeof leaf === "string" && leaf ? leaf : "\u0000";
      const at = i % (x.length + 1);
      return x.slice(0, at) + bad + x.slice(at);
    }
    if (here && typeof x === "number") return typeof leaf === "number" || leaf === OVERFLOW ? leaf : 1e308;
    if (Array.isArray(x)) return here ? [...x.map(walk), leaf] : x.map(walk);
    if (x && typeof x === "object") {
      const o = Object.fromEntries(Object.entries(x).map(([k, y]) => [k, walk(y)]));
      if (here) o[extraKey] = leaf;
      return o;
    }
    return here ? leaf : x;
  };
  return walk(v);
}

/** Percent-encode a path or query value, lone surrogates included (as their CESU-8 bytes: invalid UTF-8). */
function encode(s: string): string {
  let out = "";
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c >= 0xd800 && c <= 0xdfff) {
      const b = [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)];
      out += b.map((x) => `%${x.toString(16).toUpperCase()}`).join("");
    } else out += encodeURIComponent(ch);
  }
  return out;
}

/** Collect ids from answers: string members by name (id, deviceId, executionId, …), a few each. */
function harvest(v: unknown, known: Map<string, string[]>) {
  const stack = [v];
  while (stack.length) {
    const x = stack.pop();
    if (Array.isArray(x)) stack.push(...x);
    else if (x && typeof x === "object") {
      for (const [k, y] of Object.entries(x)) {
        if (typeof y === "string" && /^(id|deviceId|executionId|runId)$/.test(k)) {
          const list = known.get(k) ?? [];
          if (!list.includes(y) && list.length < 20) list.push(y);
          known.set(k, list);
        } else stack.push(y);
      }
    }
  }
}

const RUNS = 200;

dbTest(
  "fuzz: generated requests over every OpenAPI route never get a 5xx; refused ones store nothing",
  async (db) => {
    const { app, deviceId, plan } = await lab(db);
    const doc = (await send(app, "GET", "/api/openapi.json")).json as Doc;
    const vendors = (await send(app, "GET", "/api/admin/dut/devices")).json as {
      vendors: Array<{ key: string }>;
    };
    const known = new Map<string, string[]>([
      ["vendor", vendors.vendors.map((v) => v.key)],
      ["planIdentifier", [plan]],
      ["id", [deviceId]],
    ]);
    for (const p of ["/api/test-runs", "/api/admin/dut/devices"]) {
      harvest(
        (await send(app, "GET", p)).json,
        known,
      );
    }
    // An event stream never ends, and a PDF starts a browser: neither answer can be awaited per case here
    // (core/src/events/events_test.ts and tests/e2e/report_pdf_test.ts cover them, bad input included).
    const endless = (op: Doc["paths"][string][string]) =>
      Object.values(op.responses ?? {}).some((r) =>
        Object.keys(r.content ?? {}).some((t) => t === "text/event-stream" || t === "application/pdf")
      );
    const routes = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.entries(ops).filter(([, op]) => !endless(op))
        .map(([method, op]) => ({ path, method: method.toUpperCase(), op }))
    );
    assert.ok(routes.length >= 15, `${routes.length} routes in the document`);
    // Routes that take a body change stored data: drawn three times as often.
    const weighted = routes.flatMap((r) => r.op.requestBody ? [r, r, r] : [r]);
    const request = fc.constantFrom(...weighted).chain(({ path, method, op }) => {
      const params = (op.parameters ?? []) as Array<
        { name: string; in: string; required?: boolean; schema: Schema }
      >;
      const paramArb = (p: { name: string; schema: Schema }) =>
        fc.oneof(
          {
            weight: 3,
            arbitrary: fromSchema(p.schema, doc, known, p.name),
          },
          { weight: 1, arbitrary: fc.oneof(fc.uuid(), fc.constantFrom(...HOSTILE_STRINGS), fc.string()) },
        ).map(String);
      const bodySchema = op.requestBody?.content?.["application/json"]?.schema as Schema | undefined;
      return fc.record({
        path: fc.tuple(
          ...params.filter((p) => p.in === "path").map((p) => paramArb(p).map((v) => [p.name, v])),
        ),
        query: fc.tuple(
          ...params.filter((p) => p.in === "query").map((p) =>
            fc.option(paramArb(p).map((v) => [p.name, v]), { nil: undefined })
          ),
        ),
        body: bodySchema
          ? fc.oneof(
            { weight: 2, arbitrary: fromSchema(bodySchema, doc, known) },
            {
              weight: 3,
              arbitrary: fc.tuple(
                fromSchema(bodySchema, doc, known),
                fc.nat({ max: 40 }),
                hostileLeaf,
                fc.string(),
              )
                .map(([v, i, leaf, key]) => inject(v, i, leaf, key)),
            },
          )
          : fc.constant(undefined),
      }).map(({ path: pp, query, body }) => {
        let url = path;
        for (const [k, v] of pp as [string, string][]) url = url.replace(`{${k}}`, encode(v));
        const qs = (query as Array<[string, string] | undefined>).filter((x): x is [string, string] => !!x)
          .map(([k, v]) => `${k}=${encode(v)}`).join("&");
        return { method, url: qs ? `${url}?${qs}` : url, body, responses: op.responses ?? {} };
      });
    });
    const seen: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(request, async ({ method, url, body, responses }) => {
        const before = await fingerprint(db);
        const r = await send(
          app,
          method,
          url,
          method === "GET" || method === "DELETE" ? undefined : body ?? {},
        );
        const what = `${method} ${url} ${JSON.stringify(body)?.slice(0, 300)} -> ${r.status} ${
          JSON.stringify(r.json).slice(0, 300)
        }`;
        seen[`${Math.floor(r.status / 100)}xx`] = (seen[`${Math.floor(r.status / 100)}xx`] ?? 0) + 1;
        assert.ok(r.status < 500, what);
        if (r.status >= 400) {
          // A refusal is problem+json, or what the document says this status carries (pre-flight's 422).
          const documented = Object.keys(responses[String(r.status)]?.content ?? {});
          assert.ok(
            r.ct === "application/problem+json" || documented.includes(r.ct.split(";")[0]!),
            `undocumented ${r.ct}: ${what}`,
          );
          assert.deepEqual(await fingerprint(db), before, `refused request changed stored data: ${what}`);
        } else if (r.ct.includes("json")) harvest(r.json, known);
      }),
      { seed: 15, numRuns: RUNS, endOnFailure: true },
    );
    assert.ok((seen["2xx"] ?? 0) > 0 && (seen["4xx"] ?? 0) > 0, JSON.stringify(seen));
  },
);

dbTest(
  "a path id that is not valid percent-encoded UTF-8, or decodes to NUL, is a 4xx on every method",
  async (db) => {
    const { app } = await lab(db);
    for (const id of ["%ED%AF%BF", "%00", "%FF", "%D8%00"]) {
      for (
        const [method, path, body] of [
          ["GET", `/api/admin/dut/devices/${id}`, undefined],
          ["PATCH", `/api/admin/dut/devices/${id}`, { enabled: false }],
          ["DELETE", `/api/admin/dut/devices/${id}`, undefined],
          ["POST", `/api/admin/dut/devices/${id}/snapshot`, undefined],
          ["POST", `/api/test-runs/${id}/share`, {}],
          ["POST", `/api/test-runs/${id}/finish`, { outcome: "passed", results: { latencySamplesMs: [1] } }],
        ] as const
      ) {
        const r = await send(app, method, path, body);
        assert.ok(
          r.status >= 400 && r.status < 500,
          `${method} ${path} -> ${r.status} ${JSON.stringify(r.json)}`,
        );
      }
    }
  },
);
