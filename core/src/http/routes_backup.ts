import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Services } from "../runtime/services.ts";
import { problemResponse, problemResponses } from "./openapi_util.ts";
import { writeBackup } from "../backup/archive.ts";

/** `GET /api/admin/backup`: the archive of `deno task backup`, from the running service (docs/data.md "Backup and restore"). */
export function backupRoutes(app: OpenAPIHono, svc: Services) {
  app.openapi(
    createRoute({
      method: "get",
      path: "/api/admin/backup",
      operationId: "backup",
      tags: ["Access"],
      summary: "A consistent backup archive of the whole database (admin)",
      description:
        "The archive `deno task backup --out FILE` writes (a tar.gz of a manifest and one JSON Lines file per " +
        'table; docs/data.md "Backup and restore"), read in one REPEATABLE READ transaction while the service runs. ' +
        "It is how an embedded (PGlite) lab is backed up without stopping `serve` (`deno task backup --out FILE " +
        "--url $DUT`); the embedded database answers other requests and polls after the backup's read. Device " +
        "credentials stay encrypted; the credential key is not in the archive (the manifest names its id). " +
        "Admin role only.",
      responses: {
        200: {
          description: "The archive",
          content: { "application/gzip": { schema: { type: "string", format: "binary" } } },
        },
        ...problemResponses,
        403: problemResponse("The token's role is not admin"),
      },
    }),
    async (c) => {
      const { archive, manifest } = await writeBackup(svc.db.kysely, svc.db.kind);
      const name = `dutlab-backup-${manifest.createdAt.replace(/[:.]/g, "-")}.tar.gz`;
      return c.body(archive as Uint8Array<ArrayBuffer>, 200, {
        "content-type": "application/gzip",
        "content-disposition": `attachment; filename="${name}"`,
        "cache-control": "no-store",
      });
    },
  );
}
