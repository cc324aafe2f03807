/**
 * `dutlab lab from-netbox` and `dutlab runs netbox-journal` (issue 50, docs/netbox.md). The NetBox client is
 * the service's (core/src/netbox/): these commands send the mapping, the filters and the NetBox connection to
 * `POST /api/admin/dut/lab/from-netbox` and `…/runs/{id}/netbox-journal`, so the CLI stays HTTP-only. The
 * NetBox token comes from `NETBOX_TOKEN` (never a flag: flags show in `ps`) and goes only to the service,
 * which never stores it.
 */
import { z } from "zod";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import type { components } from "./generated/dutlab-api.ts";
import type { Command, Ctx } from "./_command.ts";
import { ok } from "./_client.ts";
import { CliError, EXIT } from "./_exit.ts";
import { bounded, note, out, printJson, readIn, table, writeOut } from "./_output.ts";

type Imported = components["schemas"]["FromNetBoxResult"];
type Journal = components["schemas"]["NetBoxJournal"];

const NetBoxEnv = z.object({
  NETBOX_URL: z.url({ protocol: /^https?$/, message: "must be an http(s):// URL" }),
  NETBOX_TOKEN: z.string().regex(
    /^((Bearer|Token) )?(nbt_[A-Za-z0-9]+\.[A-Za-z0-9]+|[0-9a-fA-F]{40})$/,
    "must be a v2 token (nbt_<key>.<token>, NetBox 4.5+) or a v1 token (40 hexadecimal characters)",
  ),
});

const str = (v: unknown) => typeof v === "string" ? v : undefined;

/** The NetBox connection: `--netbox-url` or NETBOX_URL, NETBOX_TOKEN, `--ca-file`, `--timeout-ms`. */
async function connection(ctx: Ctx) {
  const env = NetBoxEnv.safeParse({
    NETBOX_URL: str(ctx.flags["netbox-url"]) ?? (Deno.env.get("NETBOX_URL") || undefined),
    NETBOX_TOKEN: Deno.env.get("NETBOX_TOKEN") || undefined,
  });
  if (!env.success) {
    const i = env.error.issues[0]!;
    const name = String(i.path[0]);
    throw ctx.usage(
      i.code === "invalid_type"
        ? `Set ${name}${name === "NETBOX_URL" ? " (or --netbox-url)" : ""}`
        : `${name} ${i.message}`,
    );
  }
  const ca = str(ctx.flags["ca-file"]);
  const timeout = str(ctx.flags["timeout-ms"]);
  if (timeout !== undefined && !/^\d{3,6}$/.test(timeout)) {
    throw ctx.usage("--timeout-ms must be a whole number of milliseconds (100-300000)");
  }
  return {
    url: env.data.NETBOX_URL,
    token: env.data.NETBOX_TOKEN,
    ...(ca ? { caPem: await readIn(ca, "--ca-file") } : {}),
    ...(timeout ? { timeoutMs: Number(timeout) } : {}),
  };
}

const NETBOX_FLAGS = {
  "netbox-url": { type: "string" as const, value: "URL", description: "NetBox (default: $NETBOX_URL)" },
  "ca-file": {
    type: "string" as const,
    value: "FILE",
    description: "Verify NetBox's certificate against these PEM certificates",
  },
  "timeout-ms": { type: "string" as const, value: "MS", description: "Per NetBox request (default 30000)" },
};

function journalTable(j: Journal): string {
  return table(
    ["HOSTNAME", "NETBOX", "STATUS", "ATTEMPTS", "NEXT ATTEMPT", "ENTRY / ERROR"],
    j.entries.map((e) => [
      e.hostname,
      e.netboxDeviceId === null ? "-" : `#${e.netboxDeviceId}`,
      e.status,
      String(e.attempts),
      e.nextAttemptAt ?? "-",
      e.status === "posted" ? `journal entry #${e.journalEntryId ?? "?"}` : e.lastError ?? "",
    ]),
  );
}

export const netboxCommands: Command[] = [
  {
    path: ["lab", "from-netbox"],
    summary: "Write a lab file from NetBox's devices (a mapping says how); changes no device",
    arity: [0, 0],
    flags: {
      mapping: { type: "string", short: "m", value: "FILE", description: "The mapping (YAML or JSON)" },
      filter: {
        type: "string",
        multiple: true,
        value: "NAME=VALUE",
        description:
          "A NetBox device filter, as NetBox takes it (site=, role=, platform=, tag=, status=, cf_X=, q=)",
      },
      out: {
        type: "string",
        short: "o",
        value: "FILE",
        description: "Write the lab file here (default: stdout)",
      },
      strict: { type: "boolean", description: "Exit 1 and write nothing when a NetBox device is unmapped" },
      ...NETBOX_FLAGS,
    },
    more:
      "NETBOX_TOKEN is the NetBox API token (v2 nbt_<key>.<token> or v1); it goes to the service for this\n" +
      "request only. Devices no mapping covers are listed on stderr with the reason. Then `dutlab lab diff -f\n" +
      "FILE` shows the change and `dutlab lab apply -f FILE` applies it; each import is recorded (provenance).",
    async run(ctx) {
      const file = str(ctx.flags.mapping);
      if (!file) throw ctx.usage("Missing --mapping FILE (examples/netbox-mapping.yaml is one)");
      const mappingText = await readIn(file, "--mapping");
      let mapping: unknown;
      try {
        mapping = parseYaml(mappingText, { prettyErrors: false });
      } catch (e) {
        throw new CliError(
          `--mapping ${file} is neither YAML nor JSON: ${(e as Error).message.split("\n")[0]}`,
          EXIT.usage,
        );
      }
      const filters = ((ctx.flags.filter as string[] | undefined) ?? []).map((f) => {
        const m = /^([^=]+)=(.*)$/.exec(f);
        if (!m) throw ctx.usage(`--filter ${JSON.stringify(f)} is not NAME=VALUE`);
        return { name: m[1]!, value: m[2]! };
      });
      const netbox = await connection(ctx);
      const res = await ctx.svc().api.POST("/api/admin/dut/lab/from-netbox", {
        body: { netbox, filters, mapping } as never,
      });
      const r = ok(res as { data?: unknown; error?: unknown; response: Response }) as Imported;
      const unmapped = r.unmapped.map((u) =>
        `unmapped: NetBox device #${u.netboxId} ${u.name ?? "(no name)"}: ${u.reason}`
      );
      for (const line of bounded(unmapped, ctx.verbose, "unmapped device(s)")) note(line);
      const p = r.provenance;
      note(
        `NetBox ${
          p.netboxVersion ?? "(version unknown)"
        } at ${p.netboxUrl}: ${p.devices} device(s) in ${p.pages} ` +
          `page(s), ${p.mapped} mapped, ${p.unmapped} unmapped (sync ${p.id}, answers ${p.answersSha256})`,
      );
      if (ctx.flags.strict === true && r.unmapped.length) {
        note("Not written (--strict): map or filter out the devices above.");
        return EXIT.failed;
      }
      if (ctx.json) {
        printJson(r);
        return EXIT.ok;
      }
      const text = `# Imported from NetBox ${p.netboxUrl} (${p.netboxVersion ?? "?"}) at ${p.fetchedAt}; ` +
        `filters ${JSON.stringify(p.filters)}; answers ${p.answersSha256}\n` +
        toYaml(r.lab, { lineWidth: 0 });
      const dest = str(ctx.flags.out);
      if (dest) await writeOut(dest, text);
      else out(text);
      return EXIT.ok;
    },
  },
  {
    path: ["runs", "netbox-journal"],
    summary: "Write a finished run's verdict to NetBox, a journal entry per device (again: retries failures)",
    args: "<run>",
    arity: [1, 1],
    flags: {
      show: {
        type: "boolean",
        description:
          "Only show what is posted, queued and failed, with the next automatic attempt (sends nothing)",
      },
      ...NETBOX_FLAGS,
    },
    more:
      "Each device's entry holds the verdict, the report's URL and SHA-256 and the DSSE digest. Exit 0 when\n" +
      "every device is posted, 1 when any failed (run it again to retry those; posted ones are not repeated);\n" +
      "--show exits 0. With DUT_NETBOX_WRITEBACK=on the service queues and retries the entries itself:\n" +
      "--show shows that queue (pending, failed with the next attempt).",
    async run(ctx) {
      const id = ctx.args[0]!;
      const svc = ctx.svc();
      const j: Journal = ctx.flags.show === true
        ? ok(
          await svc.api.GET("/api/admin/dut/runs/{executionId}/netbox-journal", {
            params: { path: { executionId: id } },
          }),
        )
        : ok(
          await svc.api.POST("/api/admin/dut/runs/{executionId}/netbox-journal", {
            params: { path: { executionId: id } },
            body: { netbox: await connection(ctx) } as never,
          }),
        );
      if (ctx.json) printJson(j);
      else {
        out(journalTable(j));
        out(`${j.posted} posted, ${j.failed} failed${j.pending ? `, ${j.pending} pending` : ""}`);
      }
      return j.failed && ctx.flags.show !== true ? EXIT.failed : EXIT.ok;
    },
  },
];
