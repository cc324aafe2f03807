import type { components } from "./generated/dutlab-api.ts";
import type { Command, Ctx, Flag } from "./_command.ts";
import { ok, refused } from "./_client.ts";
import { CliError, EXIT, oneLine } from "./_exit.ts";
import { note, out, printJson, readJson, table, writeOut } from "./_output.ts";
import { main as verifyReport } from "../tools/verify_report.ts";

type TestRun = components["schemas"]["TestRun"];
type Preflight = components["schemas"]["PreflightResult"];
const FORMATS = ["json", "junit", "markdown", "csv"] as const;
type Format = typeof FORMATS[number];

const FORMAT_FLAGS: Record<string, Flag> = {
  format: {
    type: "string",
    value: "FORMAT",
    description: "json, junit (JUnit XML), markdown or csv, rendered by the service (default: a table)",
  },
  out: { type: "string", value: "FILE", description: "Write the result to FILE (default format: json)" },
};

/** The `--format` asked for (`--json` = json), or null for the human table. */
function formatOf(ctx: Ctx): Format | null {
  const f = ctx.flags.format as string | undefined;
  if (f !== undefined && !(FORMATS as readonly string[]).includes(f)) {
    throw ctx.usage(`--format must be one of ${FORMATS.join(", ")}, not ${JSON.stringify(f)}`);
  }
  return (f as Format | undefined) ?? (ctx.json || ctx.flags.out !== undefined ? "json" : null);
}

/** Writes a formatted answer to --out or stdout; says on stderr what was written where. */
async function emit(ctx: Ctx, format: Format, body: unknown, what: string): Promise<void> {
  const text = typeof body === "string" ? body : JSON.stringify(body, null, 2) + "\n";
  const file = ctx.flags.out as string | undefined;
  if (file === undefined) out(text);
  else {
    await writeOut(file, text);
    note(`${what}: ${format} written to ${file}`);
  }
}

const ISO = /^\d{4}-\d\d-\d\d(T\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d))?$/;

function preflightTable(ctx: Ctx, r: Preflight): string {
  const rows = r.checks.map((c) => [c.deviceHostname, c.checkId, c.status, c.detail]);
  const head = ctx.paint(r.pass ? "green" : "red", r.pass ? "PASS" : "FAIL");
  return `${table(["device", "check", "status", "detail"], rows, ctx.paint, [2])}\n${head} ${r.summary}`;
}

export const runCommands: Command[] = [
  {
    path: ["preflight"],
    summary: "Run the pre-flight checks of a plan (read-only: evaluates stored snapshots)",
    args: "<plan>",
    arity: [1, 1],
    flags: {
      device: {
        type: "string",
        multiple: true,
        value: "DEVICE",
        description: "Only this device (id or hostname)",
      },
      check: { type: "string", multiple: true, value: "CHECK", description: "Only this check id" },
      tag: { type: "string", multiple: true, value: "TAG", description: "Only devices with this tag" },
      "dry-run": { type: "boolean", description: "Say what would be evaluated, without evaluating" },
      "as-of": {
        type: "string",
        value: "TIME",
        description: "Evaluate the lab as it stood at TIME (ISO 8601)",
      },
      ...FORMAT_FLAGS,
    },
    more: "Exit 0 when every check passed, 1 when any failed or was skipped (the service's 422).\n" +
      "The filters are sent as the request members devices, checks, tags, dryRun and asOf.",
    async run(ctx) {
      const format = formatOf(ctx);
      const asOf = ctx.flags["as-of"] as string | undefined;
      if (asOf !== undefined && (!ISO.test(asOf) || isNaN(Date.parse(asOf)))) {
        throw ctx.usage(
          `--as-of must be an ISO 8601 date-time such as 2026-11-25T10:00:00Z, not ${JSON.stringify(asOf)}`,
        );
      }
      const body: Record<string, unknown> = { planIdentifier: ctx.args[0] };
      if (ctx.flags.device) body.devices = ctx.flags.device;
      if (ctx.flags.check) body.checks = ctx.flags.check;
      if (ctx.flags.tag) body.tags = ctx.flags.tag;
      if (ctx.flags["dry-run"] === true) body.dryRun = true;
      if (asOf !== undefined) body.asOf = asOf;
      const r = await ctx.svc().api.POST("/api/test-runs/preflight", {
        params: { query: { format: format ?? "json" } },
        body: body as { planIdentifier: string },
        parseAs: format === null || format === "json" ? "json" : "text",
      });
      const status = r.response.status;
      if (status !== 200 && status !== 422) refused(status, r.error);
      const answer = status === 200 ? r.data : r.error;
      if (format !== null) {
        await emit(ctx, format, answer, `pre-flight ${status === 200 ? "passed" : "not passed"}`);
      } else {
        const pf = answer as Preflight;
        out(Array.isArray(pf.checks) ? preflightTable(ctx, pf) : JSON.stringify(pf, null, 2));
      }
      return status === 200 ? EXIT.ok : EXIT.failed;
    },
  },
  {
    path: ["runs", "start"],
    summary: "Start a test run of a plan",
    args: "<plan>",
    arity: [1, 1],
    flags: {
      license: {
        type: "string",
        value: "ID",
        description: "Licence id of the report (default: the service's)",
      },
      customer: { type: "string", value: "NAME", description: "The customer the report is issued to" },
      notes: { type: "string", value: "TEXT", description: "Free text" },
      "require-preflight-pass": {
        type: "boolean",
        description: "Refuse to start unless pre-flight passes (sent as requirePreflightPass)",
      },
      override: {
        type: "string",
        value: "REASON",
        description: "Start over a failed pre-flight (admin; audited; sent as override.reason)",
      },
      testbed: { type: "string", value: "NAME", description: "Run on this testbed (reserved for the run)" },
      reservation: { type: "string", value: "ID", description: "Run under this held reservation" },
      quiet: { type: "boolean", short: "q", description: "Print only the executionId" },
    },
    more: "Exit 1 when the service refuses the start: a gated start whose pre-flight does not pass (its\n" +
      "summary is printed), or another run is active.",
    async run(ctx) {
      const body: Record<string, unknown> = { planIdentifier: ctx.args[0] };
      if (ctx.flags.license !== undefined) body.licenseId = ctx.flags.license;
      if (ctx.flags.customer !== undefined) body.customer = ctx.flags.customer;
      if (ctx.flags.notes !== undefined) body.notes = ctx.flags.notes;
      if (ctx.flags["require-preflight-pass"] === true) body.requirePreflightPass = true;
      if (ctx.flags.override !== undefined) body.override = { reason: ctx.flags.override };
      if (ctx.flags.testbed !== undefined) body.testbed = ctx.flags.testbed;
      if (ctx.flags.reservation !== undefined) body.reservationId = ctx.flags.reservation;
      const r = await ctx.svc().api.POST("/api/test-runs", { body: body as { planIdentifier: string } });
      if (!r.response.ok) {
        const e = r.error as { summary?: unknown; checks?: unknown } | undefined;
        // A gated start refused over a failed pre-flight answers 422 with the pre-flight body.
        if (r.response.status === 422 && typeof e?.summary === "string" && Array.isArray(e.checks)) {
          if (ctx.json) printJson(e);
          else out(preflightTable(ctx, e as Preflight));
          throw new CliError(`Run not started: pre-flight did not pass (${oneLine(e.summary)})`, EXIT.failed);
        }
        refused(r.response.status, r.error);
      }
      const run = r.data!;
      if (ctx.json) printJson(run);
      else if (ctx.flags.quiet === true) out(run.executionId);
      else out(`started ${runName(run)}; pre-flight at start: ${run.preflightAtStart.summary}`);
      return EXIT.ok;
    },
  },
  {
    path: ["runs", "finish"],
    summary: "Finish a run with its results; the report is built and frozen",
    args: "<executionId>",
    arity: [1, 1],
    flags: {
      outcome: {
        type: "string",
        value: "OUTCOME",
        description: "passed, failed or aborted (default: passed)",
      },
      k6: { type: "string", value: "FILE", description: "A k6 --summary-export JSON (`-`: stdin)" },
      samples: {
        type: "string",
        value: "FILE",
        description: "Latency samples: a JSON array of ms, or {latencySamplesMs, requests, …}",
      },
    },
    more: "Give exactly one of --k6 and --samples. Exit 0 when the verdict is pass, 1 otherwise.",
    async run(ctx) {
      const k6 = ctx.flags.k6 as string | undefined;
      const samples = ctx.flags.samples as string | undefined;
      if ((k6 === undefined) === (samples === undefined)) {
        throw ctx.usage("Give exactly one of --k6 and --samples");
      }
      const raw = k6 !== undefined ? await readJson(k6, "--k6") : await readJson(samples!, "--samples");
      const results = k6 !== undefined
        ? { k6Summary: raw }
        : Array.isArray(raw)
        ? { latencySamplesMs: raw }
        : raw;
      const r = ok(
        await ctx.svc().api.POST("/api/test-runs/{executionId}/finish", {
          params: { path: { executionId: ctx.args[0]! } },
          body: { outcome: (ctx.flags.outcome ?? "passed") as "passed", results: results as never },
        }),
      );
      if (ctx.json) printJson(r);
      else out(runLine(ctx, r));
      return r.verdict?.value === "pass" ? EXIT.ok : EXIT.failed;
    },
  },
  {
    path: ["runs", "list"],
    summary: "List test runs, newest first",
    arity: [0, 0],
    flags: {
      status: { type: "string", value: "STATUS", description: "active or finished" },
      plan: { type: "string", value: "PLAN", description: "Only runs of this plan" },
      limit: { type: "string", value: "N", description: "At most N runs (1-1000, default 100)" },
    },
    async run(ctx) {
      const query: Record<string, string> = {};
      if (ctx.flags.status !== undefined) query.status = ctx.flags.status as string;
      if (ctx.flags.plan !== undefined) query.planIdentifier = ctx.flags.plan as string;
      if (ctx.flags.limit !== undefined) query.limit = ctx.flags.limit as string;
      const r = ok(await ctx.svc().api.GET("/api/test-runs", { params: { query: query as never } }));
      if (ctx.json) printJson(r);
      else {
        out(table(
          ["run", "plan", "status", "started", "outcome", "verdict", "execution id"],
          r.runs.map((x) => [
            x.runId,
            x.planIdentifier,
            x.status,
            x.startedAt,
            x.outcome ?? "-",
            x.verdict?.value ?? "-",
            x.executionId,
          ]),
          ctx.paint,
          [2, 5],
        ));
      }
      return EXIT.ok;
    },
  },
  {
    path: ["runs", "get"],
    summary: "Show a run and its verdict",
    args: "<executionId>",
    arity: [1, 1],
    flags: FORMAT_FLAGS,
    more: "Exit 1 when the run is finished and its verdict is not pass (0 while it is active).",
    async run(ctx) {
      const format = formatOf(ctx);
      const svc = ctx.svc();
      const executionId = ctx.args[0]!;
      const run = ok(
        await svc.api.GET("/api/test-runs/{executionId}", { params: { path: { executionId } } }),
      ) as TestRun;
      const code = run.status === "finished" && run.verdict?.value !== "pass" ? EXIT.failed : EXIT.ok;
      if (format === "json") await emit(ctx, format, run, `run ${run.runId}`);
      else if (format !== null) {
        const r = ok(
          await svc.api.GET("/api/test-runs/{executionId}", {
            params: { path: { executionId }, query: { format } },
            parseAs: "text",
          }),
        );
        await emit(ctx, format, r, `run ${run.runId}`);
      } else {
        out(runLine(ctx, run));
        if (run.verdict) {
          out(table(
            ["input", "effect", "detail"],
            run.verdict.reasons.map((x) => [x.input, x.effect, x.detail]),
            ctx.paint,
            [1],
          ));
        }
      }
      return code;
    },
  },
  {
    path: ["runs", "compare"],
    summary: "Compare finished runs (KPIs against a baseline, plan and lab differences)",
    args: "<executionId> <executionId>...",
    arity: [2, 20],
    flags: {
      baseline: { type: "string", value: "ID", description: "The baseline run (default: the oldest)" },
      ...FORMAT_FLAGS,
    },
    more: "Exit 1 when any run is a regression against the baseline.",
    async run(ctx) {
      const format = formatOf(ctx);
      const query = {
        ids: ctx.args.join(","),
        ...(ctx.flags.baseline !== undefined ? { baseline: ctx.flags.baseline as string } : {}),
      };
      const svc = ctx.svc();
      const cmp = ok(
        await svc.api.GET("/api/test-runs/compare", { params: { query } }),
      ) as components["schemas"]["RunComparison"];
      if (format === "json") await emit(ctx, format, cmp, "comparison");
      else if (format !== null) {
        const r = ok(
          await svc.api.GET("/api/test-runs/compare", {
            params: { query: { ...query, format } },
            parseAs: "text",
          }),
        );
        await emit(ctx, format, r, "comparison");
      } else {
        out(table(
          ["run", "baseline", "verdict", "p99 ms", "rps", "errors %", "regression", "reasons"],
          cmp.runs.map((r) => [
            r.runId,
            r.isBaseline ? "yes" : "",
            r.kpis.verdict.value ?? "-",
            String(r.kpis.p99Ms.value ?? "-"),
            String(r.kpis.throughputRps.value ?? "-"),
            String(r.kpis.errorRatePct.value ?? "-"),
            String(r.regression),
            r.regressionReasons.join("; "),
          ]),
          ctx.paint,
          [2],
        ));
      }
      return cmp.summary.regressions.length ? EXIT.failed : EXIT.ok;
    },
  },
  {
    path: ["report", "get"],
    summary: "Download a finished run's report (ReportData JSON, the exact bytes)",
    args: "<executionId>",
    arity: [1, 1],
    flags: { out: { type: "string", value: "FILE", description: "Write to FILE (default: stdout)" } },
    run: (ctx) => download(ctx, `/api/test-runs/${encodeURIComponent(ctx.args[0]!)}/report.json`, "report"),
  },
  {
    path: ["report", "pdf"],
    summary: "Download a finished run's report as PDF (signed, report embedded)",
    args: "<executionId>",
    arity: [1, 1],
    flags: { out: { type: "string", value: "FILE", description: "Write to FILE (required on a terminal)" } },
    run: (ctx) => download(ctx, `/api/test-runs/${encodeURIComponent(ctx.args[0]!)}/report.pdf`, "PDF"),
  },
  {
    path: ["report", "evidence"],
    summary: "Download a run's evidence bundle (GET /api/test-runs/{id}/evidence)",
    args: "<executionId>",
    arity: [1, 1],
    flags: { out: { type: "string", value: "FILE", description: "Write to FILE (required on a terminal)" } },
    run: (ctx) => download(ctx, `/api/test-runs/${encodeURIComponent(ctx.args[0]!)}/evidence`, "evidence"),
  },
  {
    path: ["report", "verify"],
    summary: "Verify a report: every hash and, with a key, its signature (tools/verify_report.ts)",
    args: "<file | executionId>",
    arity: [1, 1],
    flags: {
      key: {
        type: "string",
        value: "KEY",
        description:
          "Public key PEM, JWK or key list, file or URL (with an executionId: the service's key list)",
      },
      expect: { type: "string", value: "SHA256", description: "The reportSha256 you trust" },
    },
    more: "A file is a report.json, report.dsse.json or report.pdf. An executionId is fetched from the\n" +
      "service (report.json and its envelope) and checked against the service's published keys.\n" +
      "Exit 0 when every check passed, 1 when one failed, 2 on a usage or input error.",
    async run(ctx) {
      const target = ctx.args[0]!;
      const args: string[] = [];
      const isId = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(target);
      if (isId) {
        const svc = ctx.svc();
        args.push(`${svc.url}/api/test-runs/${target}/report.json`);
        // The verifier sends ADMIN_TOKEN to the service it reads from.
        Deno.env.set("ADMIN_TOKEN", svc.token);
        args.push("--key", (ctx.flags.key as string | undefined) ?? `${svc.url}/api/report-keys`);
      } else {
        args.push(target);
        if (ctx.flags.key !== undefined) args.push("--key", ctx.flags.key as string);
      }
      if (ctx.flags.expect !== undefined) args.push("--expect", ctx.flags.expect as string);
      const code = await verifyReport(args);
      return code === 0 ? EXIT.ok : code === 2 ? EXIT.usage : EXIT.failed;
    },
  },
];

/** `run 12 (execution <uuid>, plan <id>) finished: verdict pass, …`: every number says what it is. */
export function runLine(ctx: Pick<Ctx, "paint">, r: TestRun): string {
  const v = r.verdict?.value ?? null;
  const verdict = v === null ? ctx.paint("yellow", "none yet") : ctx.paint(v === "pass" ? "green" : "red", v);
  return `${runName(r)} ${r.status}: verdict ${verdict}` +
    `${r.outcome ? `, outcome ${r.outcome}` : ""}${
      r.reportSha256 ? `, report sha256:${r.reportSha256}` : ""
    }`;
}

/** A run as the human output names it: `run 12 (execution <uuid>, plan <id>)`. */
const runName = (r: Pick<TestRun, "runId" | "executionId" | "planIdentifier">) =>
  `run ${r.runId} (execution ${r.executionId}, plan ${r.planIdentifier})`;

/** A file the service serves, written to --out (or stdout when it is not a terminal). */
async function download(ctx: Ctx, path: string, what: string): Promise<number> {
  const file = ctx.flags.out as string | undefined;
  if (file === undefined && what !== "report" && Deno.stdout.isTerminal()) {
    throw ctx.usage(`Give --out FILE: the ${what} is binary`);
  }
  const res = await ctx.svc().fetch(path);
  if (!res.ok) {
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch { /* not JSON: the text itself */ }
    refused(res.status, body);
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (file === undefined) await Deno.stdout.write(bytes);
  else {
    await writeOut(file, bytes);
    const sha = res.headers.get("x-report-sha256");
    note(`${what} written to ${file} (${bytes.length} bytes${sha ? `, report sha256:${sha}` : ""})`);
  }
  return EXIT.ok;
}
