/**
 * What one statement costs on PGlite through its own `query` (unnamed: six calls into WebAssembly, parsed and
 * planned every time) and through `withNamedStatements` (core/src/db/pglite_statements.ts: parsed once, then
 * one call), on a table of 10⁵ rows: a primary-key `select` with a scalar subquery, `ITER` calls (default
 * 5,000) per round, the two paths alternated over four rounds. Used in BENCHMARKS.md section 10d.
 *
 *     deno run -A --lock=deno.dev.lock bench/micro_pglite_statements.ts
 *
 * @module
 */
import { PGlite } from "@electric-sql/pglite";
import { withNamedStatements } from "../core/harness/core.ts";

const ITER = Number(Deno.env.get("ITER") ?? 5_000);
const raw = new PGlite();
await raw.waitReady;
await raw.exec(`create table t (id bigint primary key, v text);
  insert into t select g, 'v' || g from generate_series(1, 100000) g; analyze t;`);
const named = withNamedStatements(raw);
const text = `select t.id::text as id, t.v,
  (select count(*) from t t2 where t2.id between $1::bigint and $1::bigint + 3) as c from t where t.id = $1::bigint`;
const paths = { "PGlite query": raw, "named statement": named };
for (let round = 0; round < 4; round++) {
  for (const [name, db] of Object.entries(paths)) {
    const t = performance.now();
    for (let i = 0; i < ITER; i++) await db.query(text, [1 + (i * 7919) % 100_000]);
    console.log(
      `round ${round + 1}, ${name}: ${((performance.now() - t) / ITER * 1000).toFixed(1)} µs per statement`,
    );
  }
}
await raw.close();
