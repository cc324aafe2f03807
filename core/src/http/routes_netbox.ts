/**
 * NetBox as the lab's source of truth (issue 50, docs/netbox.md): import a lab file from NetBox (the plan and
 * apply stay the lab routes'), list the recorded imports, and write a finished run's verdict back as NetBox
 * journal entries. The NetBox token travels in the request body (write-only): never stored, logged, audited
 * or returned. Admin only.
 */
import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Services } from "../runtime/services.ts";
import { LabFile } from "../lab/file.ts";
import { guardedAddress, NetBoxClient, NetBoxError } from "../netbox/client.ts";
import { NetBoxMapping } from "../netbox/mapping.ts";
import { FILTER_NAME, importFromNetBox, listSyncs, RESERVED_FILTERS } from "../netbox/sync.ts";
import { journalRows, writeBack } from "../netbox/journal.ts";
import {
  json,
  notFoundResponse,
  problemResponse,
  problemResponses,
  unprocessableResponse,
} from "./openapi_util.ts";
import { noteForAudit } from "./audit.ts";
import { problemResponse as sendProblem, problemType, validationProblem } from "./problem.ts";
import { runForJournal } from "../runtime/services.ts";

const tags = ["NetBox"];

const NetBoxConnection = z.object({
  url: z.url({ protocol: /^https?$/, message: "must be an http(s):// URL" }).max(2000).openapi({
    description: "NetBox's base URL (the API is its /api/…), e.g. https://netbox.example.com. Unspecified, " +
      "link-local and cloud-metadata addresses are refused (422).",
  }),
  token: z.string().regex(
    /^((Bearer|Token) )?(nbt_[A-Za-z0-9]+\.[A-Za-z0-9]+|[0-9a-fA-F]{40})$/,
    "must be a v2 token (nbt_<key>.<token>) or a v1 token (40 hexadecimal characters)",
  ).max(512).openapi({
    format: "password",
    writeOnly: true,
    description: "A v2 token (nbt_<key>.<token>, NetBox 4.5+; sent as Bearer) or a v1 token (40 hex " +
      "characters; sent as Token). Never stored, logged or returned.",
  }),
  caPem: z.string().max(100_000).regex(/-----BEGIN CERTIFICATE-----/, "must be PEM certificates").optional()
    .openapi({
      description: "PEM certificates to verify NetBox's TLS certificate against (a CA file's text)",
    }),
  timeoutMs: z.number().int().min(100).max(300_000).optional().openapi({
    description: "Milliseconds per NetBox request (default 30000)",
  }),
}).strict().openapi("NetBoxConnection");

const Filter = z.object({
  name: z.string().regex(FILTER_NAME, "must be a NetBox filter name (a-z, 0-9, _)").refine(
    (n) => !RESERVED_FILTERS.has(n),
    "is set by dutlab (paging and shape), not a filter",
  ),
  value: z.string().max(500),
}).strict();

const FromNetBoxRequest = z.object({
  netbox: NetBoxConnection,
  filters: z.array(Filter).max(50).default([]).openapi({
    description: "NetBox's own device filters (site, role, platform, tag, status, cf_<field>, q, …), " +
      "sent as they are: a name given twice is NetBox's OR (tag: AND), two names are AND",
  }),
  mapping: NetBoxMapping,
}).strict().openapi("FromNetBoxRequest");

const Unmapped = z.object({
  netboxId: z.union([z.number().int(), z.string()]),
  name: z.string().nullable(),
  reason: z.string(),
});
const Provenance = z.object({
  id: z.uuid(),
  netboxUrl: z.string(),
  filters: z.array(z.tuple([z.string(), z.string()])),
  netboxVersion: z.string().nullable(),
  fetchedAt: z.string(),
  answersSha256: z.string(),
  pages: z.number().int(),
  devices: z.number().int(),
  mapped: z.number().int(),
  unmapped: z.number().int(),
}).openapi("NetBoxSync");
const FromNetBoxResult = z.object({
  lab: LabFile.openapi("LabFile"),
  unmapped: z.array(Unmapped),
  provenance: Provenance,
}).openapi("FromNetBoxResult");

const JournalRequest = z.object({ netbox: NetBoxConnection }).strict().openapi("NetBoxJournalRequest");
const JournalEntry = z.object({
  hostname: z.string(),
  netboxDeviceId: z.number().int().nullable(),
  status: z.enum(["pending", "posted", "failed"]).openapi({
    description: "pending: queued by the run's finish (DUT_NETBOX_WRITEBACK=on), not tried yet; posted; " +
      "failed: NetBox refused or failed (lastError), retried",
  }),
  attempts: z.number().int(),
  lastError: z.string().nullable(),
  journalEntryId: z.number().int().nullable(),
  updatedAt: z.string(),
  nextAttemptAt: z.string().nullable().openapi({
    description: "When the automatic write-back tries this entry next (queued entries), else null",
  }),
});
const JournalResult = z.object({
  executionId: z.string(),
  posted: z.number().int(),
  failed: z.number().int(),
  pending: z.number().int(),
  entries: z.array(JournalEntry),
}).openapi("NetBoxJournal");

const body = <T>(schema: T) => ({ body: { content: { "application/json": { schema } }, required: true } });
const badGateway = {
  502: problemResponse(
    "NetBox refused or failed (`netboxObject` names the NetBox object, `netboxStatus` its HTTP status): " +
      "401/403/404 from NetBox, not JSON, a repeating page, an endless next chain, a timeout",
  ),
};

function netboxProblem(c: Context, e: NetBoxError, status = 502) {
  return sendProblem(c, {
    type: problemType(status === 422 ? "netbox-mapping" : "netbox"),
    title: status === 422 ? "The NetBox devices cannot be mapped" : "NetBox refused or failed",
    status,
    detail: e.message,
    netboxObject: e.object,
    netboxStatus: e.status,
    retryable: e.retryable,
  });
}

/** The client, or a 422 naming the field (a CA that is no certificate, a guarded address). */
async function client(c: Context, n: z.infer<typeof NetBoxConnection>): Promise<NetBoxClient | Response> {
  const refused = await guardedAddress(n.url);
  if (refused) {
    return sendProblem(c, {
      type: problemType("unprocessable"),
      title: "Unprocessable",
      status: 422,
      detail: refused,
      errors: [{ field: "netbox.url", message: refused }],
    });
  }
  try {
    return new NetBoxClient({ url: n.url, token: n.token, caPem: n.caPem, timeoutMs: n.timeoutMs });
  } catch (e) {
    const field = e instanceof NetBoxError ? `netbox.${e.object}` : "netbox.caPem";
    const message = e instanceof NetBoxError ? e.message : "holds no certificate that can be loaded";
    return sendProblem(c, {
      type: problemType("unprocessable"),
      title: "Unprocessable",
      status: 422,
      detail: `${field} ${message}`,
      errors: [{ field, message }],
    });
  }
}

const hook = (result: { success: boolean; error?: z.ZodError }, c: Context) => {
  if (!result.success) {
    return validationProblem(
      c,
      result.error!.issues.map((i) => ({
        field: i.path.map(String).join(".") || "body",
        message: i.message,
      })),
    );
  }
};

export function netboxRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/dut/lab/from-netbox",
      operationId: "labFromNetBox",
      tags,
      summary: "Import a lab file from NetBox (changes no device)",
      description: "Reads NetBox's version (/api/status/) and every page of /api/dcim/devices/ under the " +
        "filters (the token re-sent on each page), maps the devices with `mapping` and answers the lab file, " +
        "the devices no mapping covers with their reason, and the sync's provenance (recorded: " +
        "GET /api/admin/dut/netbox/syncs). Plan and apply the file with the lab routes. 502 when NetBox " +
        "refuses or answers badly (the NetBox object named); 422 when two NetBox devices map to one hostname.",
      request: body(FromNetBoxRequest),
      responses: {
        200: json(FromNetBoxResult, "The lab file, the unmapped devices and the provenance"),
        ...problemResponses,
        ...unprocessableResponse,
        ...badGateway,
      },
    }),
    async (c) => {
      const req = c.req.valid("json");
      const nb = await client(c, req.netbox);
      if (nb instanceof Response) return nb as never;
      try {
        const r = await importFromNetBox(
          svc.db.kysely,
          nb,
          req.mapping,
          req.filters.map((f) => [f.name, f.value] as [string, string]),
        );
        noteForAudit(
          c,
          `netbox import ${r.provenance.id} from ${r.provenance.netboxUrl} (${r.provenance.mapped} mapped, ` +
            `${r.provenance.unmapped} unmapped, ${r.provenance.answersSha256})`,
        );
        return c.json(r, 200);
      } catch (e) {
        if (e instanceof NetBoxError) {
          return netboxProblem(c, e, /map to one hostname/.test(e.message) ? 422 : 502) as never;
        }
        throw e;
      } finally {
        nb.close();
      }
    },
    hook as never,
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/netbox/syncs",
      operationId: "listNetBoxSyncs",
      tags,
      summary: "The recorded NetBox imports, newest first (at most 100)",
      description: "Each import's NetBox URL, filters, NetBox version, time and the SHA-256 of the fetched " +
        "answers. Admin only.",
      responses: { 200: json(z.object({ syncs: z.array(Provenance) }), "The imports"), ...problemResponses },
    }),
    async (c) => c.json({ syncs: await listSyncs(svc.db.kysely) }, 200),
  );

  netboxJournalRoutes(app, svc);
}

const journalCounts = (entries: Array<{ status: string }>) => ({
  posted: entries.filter((e) => e.status === "posted").length,
  failed: entries.filter((e) => e.status === "failed").length,
  pending: entries.filter((e) => e.status === "pending").length,
});

/** The write-back of a finished run: post (and retry), and read what was recorded. */
function netboxJournalRoutes(app: OpenAPIHono, svc: Services) {
  const runParam = z.object({ executionId: z.string().min(1).max(200) });
  app.openapi(
    createRoute({
      method: "post",
      path: "/api/admin/dut/runs/{executionId}/netbox-journal",
      operationId: "writeNetBoxJournal",
      tags,
      summary: "Write a finished run's verdict back to NetBox, one journal entry per device",
      description:
        "Posts on each device of the run (the NetBox device of its `netbox:<id>` tag, else of its " +
        "name) a journal entry with the verdict, the report's URL and SHA-256 and the DSSE envelope's digest. " +
        "Devices already posted are skipped; a failed one is retried by calling again (429 and 502-504 are " +
        "retried at once after Retry-After). Each device's outcome is kept (GET). The run is never changed. " +
        "409 while the run is active.",
      request: { params: runParam, ...body(JournalRequest) },
      responses: {
        200: json(JournalResult, "Each device's outcome (failed ones carry NetBox's reason)"),
        ...problemResponses,
        ...notFoundResponse,
        409: problemResponse("The run has not finished"),
        ...unprocessableResponse,
      },
    }),
    async (c) => {
      const { executionId } = c.req.valid("param");
      const req = c.req.valid("json");
      const origin = svc.config.DUT_PUBLIC_URL?.replace(/\/+$/, "") ?? new URL(c.req.url).origin;
      const run = await runForJournal(svc, executionId, origin);
      if (!run) {
        return sendProblem(c, {
          type: problemType("conflict"),
          title: "Conflict",
          status: 409,
          detail: `Run "${executionId}" has not finished; its verdict cannot be written back yet`,
        }) as never;
      }
      const nb = await client(c, req.netbox);
      if (nb instanceof Response) return nb as never;
      try {
        const entries = await writeBack(svc.db.kysely, nb, run);
        const counts = journalCounts(entries);
        noteForAudit(
          c,
          `netbox journal of run ${executionId}: ${counts.posted} posted, ${counts.failed} failed`,
        );
        return c.json({ executionId, ...counts, entries }, 200);
      } finally {
        nb.close();
      }
    },
    hook as never,
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/dut/runs/{executionId}/netbox-journal",
      operationId: "getNetBoxJournal",
      tags,
      summary: "A run's NetBox write-back: each device pending, posted or failed (with the reason, the " +
        "attempts and the next attempt of the automatic write-back)",
      request: { params: runParam },
      responses: {
        200: json(JournalResult, "Each device's outcome"),
        ...problemResponses,
        ...notFoundResponse,
      },
    }),
    async (c) => {
      const { executionId } = c.req.valid("param");
      await svc.runs.get(executionId);
      const entries = await journalRows(svc.db.kysely, executionId);
      return c.json({ executionId, ...journalCounts(entries), entries }, 200);
    },
  );
}
