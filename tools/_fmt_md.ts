/**
 * Markdown as `deno fmt` formats it with this repository's settings (deno.json: lineWidth 110), for the
 * generators that write documentation (tools/gen_config_docs.ts, tools/dev/gen_benchmarks.ts).
 *
 * @module
 */
const ROOT = new URL("..", import.meta.url);

/** `markdown` formatted by the running Deno's `fmt`, from the repository root (so deno.json applies). */
export async function fmtMarkdown(markdown: string): Promise<string> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext", "md", "-"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(markdown));
  await writer.close();
  const out = await child.output();
  if (!out.success) throw new Error(`deno fmt failed: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}
