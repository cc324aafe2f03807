import { z } from "zod";
import { usage } from "./_exit.ts";

/** The environment the CLI reads, validated once. */
const Env = z.object({
  DUT_URL: z.url({ protocol: /^https?$/, message: "must be an http:// or https:// URL" })
    .default("http://localhost:8080"),
  DUT_TOKEN: z.string().optional(),
  NO_COLOR: z.string().optional(),
});

/** A bearer token as the service accepts it: printable ASCII without spaces. */
const Token = z.string().min(1, "is empty").max(4096, "is longer than 4096 characters")
  .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces");

export interface Config {
  /** The service's base URL, without a trailing slash. */
  url: string;
  /** The bearer token, or null when none was given. */
  token: string | null;
  /** Colour on stdout: only on a terminal, never with NO_COLOR set (no-color.org). */
  colour: boolean;
}

const problems = (e: z.ZodError, what: (path: string) => string) =>
  e.issues.map((i) => `${what(i.path.join("."))} ${i.message}`).join("; ");

/** The configuration from the environment and the global flags (`--url`, `--token-file`). */
export async function loadConfig(flags: { url?: string; tokenFile?: string }): Promise<Config> {
  const env = Env.safeParse({
    DUT_URL: flags.url ?? (Deno.env.get("DUT_URL") || undefined),
    DUT_TOKEN: Deno.env.get("DUT_TOKEN") || undefined,
    NO_COLOR: Deno.env.get("NO_COLOR"),
  });
  if (!env.success) {
    throw usage(problems(env.error, (p) => p === "DUT_URL" && flags.url ? "--url" : p));
  }
  let raw: string | undefined = env.data.DUT_TOKEN;
  let from = "DUT_TOKEN";
  if (flags.tokenFile !== undefined) {
    from = `--token-file ${JSON.stringify(flags.tokenFile)}`;
    try {
      raw = (await Deno.readTextFile(flags.tokenFile)).replace(/\r?\n$/, "");
    } catch (e) {
      throw usage(`Cannot read ${from}: ${(e as Error).message}`);
    }
  }
  let token: string | null = null;
  if (raw !== undefined) {
    const t = Token.safeParse(raw);
    if (!t.success) throw usage(`The token of ${from} ${t.error.issues[0]!.message}`);
    token = t.data;
  }
  return {
    url: env.data.DUT_URL.replace(/\/+$/, ""),
    token,
    colour: Deno.stdout.isTerminal() && !env.data.NO_COLOR,
  };
}
