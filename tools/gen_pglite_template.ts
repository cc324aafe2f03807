/**
 * `deno task gen:pglite-template`: write core/src/db/pglite_template.tar.gz, the migrated PGlite data
 * directory a first embedded start unpacks instead of running initdb (docs/configuration.md).
 * Run it after adding a migration or changing the PGlite version.
 */
import { buildTemplate, TEMPLATE_URL } from "../core/ops.ts";

const { bytes, migrations } = await buildTemplate();
await Deno.writeFile(TEMPLATE_URL, bytes);
console.error(`Wrote ${TEMPLATE_URL.pathname} (${bytes.length} bytes; migrations: ${migrations.join(", ")})`);
