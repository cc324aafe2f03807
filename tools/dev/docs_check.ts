/**
 * `deno task docs:check` (issue 47): the documentation's links, anchors and code spans.
 *
 * Over README.md, BENCHMARKS.md, docs/**\/*.md and every member README (adapters/*, checks/*, plugins/*,
 * cli, examples), outside code blocks:
 * - every relative link, image and link reference definition names a file or directory of the repository
 *   (`http(s):`, `mailto:` and other schemes are not fetched nor checked);
 * - every `#anchor` of such a link (or of `[text](#anchor)`) is a heading of the target Markdown file, slugged
 *   as GitHub does (github-slugger: duplicates get `-1`, `-2`…), or an explicit `<a id="…">`/`<a name="…">`;
 * - no inline code span breaks across lines (a span opened on one line closes on it), and no backtick run is
 *   left unclosed in the text (a span cut by a table row or by a line that starts a new block).
 *
 * Markdown is read with marked (CommonMark + GFM: fenced and indented code blocks are skipped, a backtick run
 * of N characters closes only on a run of exactly N). Prints every problem as `file:line: message` and exits
 * 1, else prints a one-line summary and exits 0. `--root DIR` checks another tree (tests point it at a copy).
 *
 * Lives in `tools/dev/` because `lock:check` treats `tools/*.ts` as product entrypoints; run it with
 * `--lock=deno.dev.lock`.
 */
// deno-lint-ignore no-import-prefix -- dev-only: kept out of deno.json and deno.lock (tests/gate/lockfiles_test.ts)
import { marked, type Token, type Tokens } from "npm:marked@18.2.1";
// deno-lint-ignore no-import-prefix -- dev-only, as above
import GithubSlugger from "npm:github-slugger@2.0.0";
import { dirname, join, normalize, posix } from "node:path";
import { fileURLToPath } from "node:url";

/** One problem found, at a 1-based line of a file given relative to the root. */
export interface Problem {
  file: string;
  line: number;
  message: string;
}

/** What one run checked and found. */
export interface DocsReport {
  /** Markdown files checked, relative to the root. */
  files: string[];
  /** Relative links (and link reference definitions) checked. */
  links: number;
  /** Of those, the ones with an `#anchor`. */
  anchors: number;
  /** External links seen and left unchecked. */
  external: number;
  problems: Problem[];
}

/** A token with the 1-based line of the source where it starts. */
interface Located {
  token: Token;
  line: number;
}

/** A Markdown file read once: its tokens in document order, with their lines. */
interface Parsed {
  located: Located[];
}

const EXTERNAL = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;
const HTML_ANCHOR = /<a\s[^>]*?\b(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/gi;

/** The Markdown files checked under `root`, relative to it, in a stable order. */
export async function docFiles(root: string): Promise<string[]> {
  const files: string[] = [];
  for (const name of ["README.md", "BENCHMARKS.md"]) if (await isFile(join(root, name))) files.push(name);
  files.push(...(await mdUnder(root, "docs")));
  for (const group of ["adapters", "checks", "plugins"]) {
    for (const dir of await subdirs(join(root, group))) {
      const rel = `${group}/${dir}/README.md`;
      if (await isFile(join(root, rel))) files.push(rel);
    }
  }
  for (const rel of ["cli/README.md", "examples/README.md"]) {
    if (await isFile(join(root, rel))) files.push(rel);
  }
  return files;
}

/** Check every file of {@link docFiles} under `root`. */
export async function checkDocs(root: string): Promise<DocsReport> {
  const files = await docFiles(root);
  const cache = new Map<string, Promise<Parsed | null>>();
  const parsed = (rel: string) => {
    let p = cache.get(rel);
    if (!p) {
      p = Deno.readTextFile(join(root, rel)).then(parse, () => null);
      cache.set(rel, p);
    }
    return p;
  };
  const anchorCache = new Map<string, Promise<Set<string> | null>>();
  const anchorsOf = (rel: string) => {
    let p = anchorCache.get(rel);
    if (!p) {
      p = parsed(rel).then((doc) => doc && anchors(doc));
      anchorCache.set(rel, p);
    }
    return p;
  };
  const report: DocsReport = { files, links: 0, anchors: 0, external: 0, problems: [] };
  for (const file of files) {
    const doc = await parsed(file);
    if (!doc) continue;
    for (const { token, line } of doc.located) {
      const problem = (message: string) => report.problems.push({ file, line, message });
      if (token.type === "codespan" && token.raw.includes("\n")) {
        problem("inline code span breaks across lines");
        continue;
      }
      const stray = strayBackticks(token);
      if (stray !== null) {
        report.problems.push({ file, line: line + stray, message: "code span not closed on its line" });
      }
      const href = hrefOf(token);
      if (href === null) continue;
      if (EXTERNAL.test(href)) {
        report.external++;
        continue;
      }
      report.links++;
      const message = await checkHref(root, file, href, anchorsOf, () => report.anchors++);
      if (message) problem(message);
    }
  }
  const order = new Map(files.map((f, i) => [f, i]));
  report.problems.sort((a, b) => order.get(a.file)! - order.get(b.file)! || a.line - b.line);
  return report;
}

/**
 * What is wrong with the relative link `href` of `file`, or null. `anchorsOf` gives the anchors of a Markdown
 * file of the tree (null when it cannot be read).
 */
async function checkHref(
  root: string,
  file: string,
  href: string,
  anchorsOf: (rel: string) => Promise<Set<string> | null>,
  countAnchor: () => void,
): Promise<string | null> {
  const hash = href.indexOf("#");
  const pathPart = (hash < 0 ? href : href.slice(0, hash)).replace(/\?.*$/, "");
  const anchor = hash < 0 ? "" : decode(href.slice(hash + 1));
  let target = file;
  if (pathPart !== "") {
    const path = decode(pathPart);
    target = normalize(path.startsWith("/") ? path.slice(1) : join(dirname(file), path)).replace(/\/$/, "");
    if (target === ".." || target.startsWith("../")) return `link to ${pathPart}: outside the repository`;
    if (target === "") target = ".";
  }
  const stat = await Deno.stat(join(root, target)).catch(() => null);
  if (!stat) return `link to ${pathPart}: no such file`;
  if (hash < 0 || anchor === "") return null;
  countAnchor();
  let md = target;
  if (stat.isDirectory) {
    // GitHub shows a directory's README.md below its listing; an anchor points into it.
    md = posix.join(target, "README.md");
    if (!(await isFile(join(root, md)))) {
      return `anchor #${anchor}: ${target} is a directory without README.md`;
    }
  } else if (!/\.(md|markdown)$/i.test(target)) {
    // Line anchors of a source file as GitHub shows it (#L10, #L10-L20); other anchors are not checked.
    return /^L\d+(-L\d+)?$/.test(anchor) ? null : `anchor #${anchor} in ${target}, which is not Markdown`;
  }
  const known = await anchorsOf(md);
  if (known === null) return `link to ${pathPart || file}: cannot be read`;
  return known.has(anchor) ? null : `anchor #${anchor} not found in ${md}`;
}

/**
 * A backtick run left in plain text, i.e. a code span opened and never closed (for instance one broken across
 * a table row or by a line that starts a new block): its line within the token, else null.
 */
function strayBackticks(token: Token): number | null {
  if (token.type !== "text" || ("tokens" in token && token.tokens?.length)) return null;
  const at = token.raw.indexOf("`");
  return at < 0 ? null : token.raw.slice(0, at).split("\n").length - 1;
}

/** The link target a token carries (inline link, image or link reference definition), else null. */
function hrefOf(token: Token): string | null {
  if (token.type === "link" || token.type === "image") {
    // A reference link (`[text][ref]`, `[ref]`) is checked once, at its definition.
    if (!token.raw.endsWith(")")) return null;
    return (token as Tokens.Link | Tokens.Image).href;
  }
  if (token.type === "def") return (token as Tokens.Def).href;
  return null;
}

/** The anchors of a parsed file: its headings slugged as GitHub does, then its explicit HTML anchors. */
function anchors(doc: Parsed): Set<string> {
  const slugger = new GithubSlugger();
  const found = new Set<string>();
  for (const { token } of doc.located) {
    if (token.type === "heading") found.add(slugger.slug(plainText((token as Tokens.Heading).tokens)));
    if (token.type === "html") {
      for (const m of token.raw.matchAll(HTML_ANCHOR)) found.add(m[1] ?? m[2] ?? m[3]!);
    }
  }
  return found;
}

/** The text a heading renders to (what GitHub slugs): code span contents, link texts, no HTML tags. */
function plainText(tokens: Token[]): string {
  let text = "";
  for (const t of tokens) {
    if (t.type === "html") continue;
    if ("tokens" in t && Array.isArray(t.tokens) && t.tokens.length) text += plainText(t.tokens);
    else if (t.type === "image") text += (t as Tokens.Image).text;
    else if ("text" in t && typeof t.text === "string") text += t.text;
  }
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ENTITIES[e]!);
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" };

/** Tokenize `src` and give each token (nested ones included) the line where it starts. */
export function parse(src: string): Parsed {
  const text = src.replace(/\r\n?/g, "\n");
  const lineStarts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) lineStarts.push(i + 1);
  const lineAt = (offset: number) => {
    let lo = 0, hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const located: Located[] = [];
  locate(text, marked.lexer(text, { gfm: true }), 0, located, lineAt);
  return { located };
}

/**
 * Find each token in the source from `from` on, in document order. A token's `raw` is its source text, except
 * inside list items, block quotes and table cells, where marked strips the indentation, `>` or `\|`: then the
 * first line of `raw` is looked up instead. Code blocks are kept as one token (their text is not Markdown).
 */
function locate(
  src: string,
  tokens: Token[],
  from: number,
  out: Located[],
  lineAt: (offset: number) => number,
): number {
  let cursor = from;
  for (const token of tokens) {
    const raw = token.raw ?? "";
    const first = raw.split("\n")[0]!;
    let pos = raw ? src.indexOf(raw, cursor) : -1;
    let end = pos < 0 ? -1 : pos + raw.length;
    // The first line found earlier than the whole raw text: the token is there, its later lines stripped.
    let head = first && (first !== raw || pos < 0) ? src.indexOf(first, cursor) : -1;
    if (head < 0 && first.includes("|")) head = src.indexOf(first.replaceAll("|", "\\|"), cursor);
    if (head >= 0 && (pos < 0 || head < pos)) {
      pos = head;
      end = pos + (src.startsWith(first, pos) ? first.length : 0);
    }
    if (pos < 0) pos = end = cursor;
    out.push({ token, line: lineAt(pos) });
    if (token.type !== "code") {
      for (const children of childLists(token)) locate(src, children, pos, out, lineAt);
    }
    cursor = Math.max(cursor, end);
  }
  return cursor;
}

/** The nested token lists of a token: inline tokens, list items, table cells. */
function childLists(token: Token): Token[][] {
  const lists: Token[][] = [];
  if (token.type === "list") lists.push((token as Tokens.List).items);
  else if (token.type === "table") {
    const table = token as Tokens.Table;
    for (const cell of table.header) lists.push(cell.tokens);
    for (const row of table.rows) for (const cell of row) lists.push(cell.tokens);
  } else if ("tokens" in token && Array.isArray(token.tokens)) lists.push(token.tokens);
  return lists;
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

async function isFile(path: string): Promise<boolean> {
  return (await Deno.stat(path).catch(() => null))?.isFile ?? false;
}

async function subdirs(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) if (e.isDirectory) names.push(e.name);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return names.sort();
}

/** Every `*.md` under `root/dir`, recursively, relative to `root`. */
async function mdUnder(root: string, dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries: Deno.DirEntry[] = [];
  try {
    for await (const e of Deno.readDir(join(root, dir))) entries.push(e);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return out;
    throw e;
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...(await mdUnder(root, rel)));
    else if (e.isFile && e.name.endsWith(".md")) out.push(rel);
  }
  return out;
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--root");
  const root = at >= 0 && Deno.args[at + 1]
    ? Deno.args[at + 1]!
    : fileURLToPath(new URL("../..", import.meta.url));
  const report = await checkDocs(root);
  for (const p of report.problems) console.log(`${p.file}:${p.line}: ${p.message}`);
  const summary = `${report.files.length} Markdown files, ${report.links} relative links checked ` +
    `(${report.anchors} with an anchor; ${report.external} external links not checked)`;
  if (report.problems.length) {
    console.error(`docs_check: ${report.problems.length} problem(s) in ${summary}`);
    Deno.exit(1);
  }
  console.log(`docs_check: ${summary}, no problems`);
}
