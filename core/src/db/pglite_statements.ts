/**
 * Named statements for PGlite: the embedded database's counterpart of `preparing` (prepared.ts) on node-postgres.
 *
 * PGlite's `query` sends every statement as an unnamed one in five calls into WebAssembly (Parse, Describe
 * statement, Bind, Describe portal, Execute) and a sixth for Sync, so each run parses, analyses and plans the
 * statement again inside the single-threaded WebAssembly PostgreSQL. Measured on this machine
 * (BENCHMARKS.md section 10d, `bench/micro_pglite_statements.ts`): a primary-key `select` took 186-226 µs
 * that way and 94-123 µs as a named statement bound and executed in one call through this module (52-58 µs
 * in a bare loop without PGlite's locks and file-system sync, which this module keeps). The
 * dialect here keeps each data statement's text (`select`, `with`, `insert`, `update`, `delete`) as a named
 * statement, parsed and described once, and runs it afterwards with one call (Bind, Execute, Sync): parameters
 * are serialized and rows parsed with PGlite's own serializers and parsers for the types the Describe
 * reported, so a client sees exactly what `query` returned. The statements kept are bounded
 * ({@link PGLITE_STATEMENTS}, least recently used closed first), since a text with a list literal or an
 * `in (…)` of a given length is a statement of its own; DDL, transaction control and anything else go through
 * PGlite's `query` unchanged.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { parse, type PGlite, protocol } from "@electric-sql/pglite";

/** Named statements PGlite keeps at most; the least recently used is closed when a new one is needed. */
export const PGLITE_STATEMENTS = 100;

type QueryOptions = Parameters<PGlite["query"]>[2];
type Results = Awaited<ReturnType<PGlite["query"]>>;
type Message = Awaited<ReturnType<PGlite["execProtocolStream"]>>[number];
type Tx = Parameters<Parameters<PGlite["transaction"]>[0]>[0];

interface Kept {
  name: string;
  /** Parameter types from the Describe: the serializer of each value. */
  types: number[];
  /** The RowDescription (absent for a statement that returns no rows): the parser of each column. */
  rows: Message | undefined;
}

/**
 * Whether an error says that a kept statement went stale: its result type changed under it (0A000 with
 * PostgreSQL's "cached plan must not change result type"; the code alone covers every unsupported feature)
 * or the session no longer knows it (26000).
 */
function stale(e: unknown): boolean {
  const { code, message } = e as { code?: string; message?: string };
  return code === "26000" ||
    (code === "0A000" && (message ?? "").includes("cached plan must not change result type"));
}
const DATA = /^\s*(?:select|with|insert|update|delete)\b/i;
const ser = protocol.serialize;

/** The named statements of one PGlite session, least recently used first. */
class Statements {
  readonly #kept = new Map<string, Kept>(); // insertion order is recency order: a use moves it to the end
  /** Statements dropped from `#kept` that the session still holds, closed with the next Parse. */
  readonly #toClose: string[] = [];
  #seq = 0;
  constructor(readonly pglite: PGlite, readonly max: number) {}

  /** Runs a data statement as a named one; the caller holds PGlite's query lock. */
  async run(text: string, params: unknown[], options: QueryOptions, inTx: boolean): Promise<Results> {
    let k = this.#kept.get(text);
    if (k) {
      this.#kept.delete(text);
      this.#kept.set(text, k);
    } else k = await this.#prepare(text, options);
    const values = params.map((v, i) => {
      if (v === null || v === undefined) return null;
      const type = k.types[i]!;
      const s = options?.serializers?.[type] ?? this.pglite.serializers[type];
      return s ? s(v) : String(v);
    });
    let messages: Message[];
    try {
      messages = await this.pglite.execProtocolStream(
        Buffer.concat([ser.bind({ statement: k.name, values }), ser.execute({}), ser.sync()]),
        { syncToFs: false },
      );
    } catch (e) {
      // A table changed under the statement so that its result type did (0A000), or the session lost it
      // (26000): forget it, so that the next run prepares it again.
      if (stale(e) && this.#kept.get(text) === k) {
        this.#kept.delete(text);
        if ((e as { code?: string }).code === "0A000") this.#toClose.push(k.name);
      }
      Object.assign(e as object, { query: text, params, queryOptions: options });
      throw e;
    }
    const [result] = parse.parseResults(
      k.rows ? [k.rows, ...messages] : messages,
      this.pglite.parsers,
      options,
    );
    if (!inTx) await this.pglite.syncToFs();
    return result!;
  }

  /** Parses and describes a new named statement (closing the least recently used ones beyond `max`). */
  async #prepare(text: string, options: QueryOptions): Promise<Kept> {
    while (this.#kept.size >= this.max) {
      const [oldest, k] = this.#kept.entries().next().value!;
      this.#kept.delete(oldest);
      this.#toClose.push(k.name);
    }
    const name = `dutlab_${++this.#seq}`;
    const closing = this.#toClose.splice(0).map((n) => ser.close({ type: "S", name: n }));
    const messages = await this.pglite.execProtocolStream(
      Buffer.concat([
        ...closing,
        ser.parse({ name, text, types: options?.paramTypes }),
        ser.describe({ type: "S", name }),
        ser.sync(),
      ]),
      { syncToFs: false },
    );
    const params = messages.find((m) => m.name === "parameterDescription") as
      | { dataTypeIDs: number[] }
      | undefined;
    const k = {
      name,
      types: params?.dataTypeIDs ?? [],
      rows: messages.find((m) => m.name === "rowDescription"),
    };
    this.#kept.set(text, k);
    return k;
  }
}

/**
 * What Kysely's `PGliteDialect` is given instead of the PGlite instance: the instance's own members, with
 * `query` (and a transaction's `query`) running data statements as named ones. Locks as PGlite's `query`
 * does: outside a transaction it waits for any transaction, and every statement holds the query lock.
 */
export function withNamedStatements(pglite: PGlite, max = PGLITE_STATEMENTS): PGlite {
  const statements = new Statements(pglite, max);
  const named =
    (inTx: boolean, fallback: (t: string, p?: unknown[], o?: QueryOptions) => Promise<Results>) =>
    (text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results> => {
      if (!DATA.test(text) || options?.blob) return fallback(text, params, options);
      const go = () => pglite.runExclusive(() => statements.run(text, params, options, inTx));
      if (inTx) return go();
      // Outside a transaction a statement that failed only because its kept version went stale (see
      // `Statements.run`) did nothing: it runs again, prepared anew.
      return pglite._runExclusiveTransaction(() => go().catch((e) => stale(e) ? go() : Promise.reject(e)));
    };
  const query = named(false, (t, p, o) => pglite.query(t, p, o));
  const transaction = <T>(fn: (tx: Tx) => Promise<T>) =>
    pglite.transaction((tx) => {
      const txQuery = named(true, (t, p, o) => tx.query(t, p, o));
      return fn(
        new Proxy(tx, {
          get(t, p) {
            if (p !== "query") return Reflect.get(t, p, t);
            return (text: string, params?: unknown[], options?: QueryOptions) => {
              if (tx.closed) return Promise.reject(new Error("Transaction is closed"));
              return txQuery(text, params, options);
            };
          },
        }),
      );
    });
  return new Proxy(pglite, {
    get(target, prop) {
      if (prop === "query") return query;
      if (prop === "transaction") return transaction;
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}
