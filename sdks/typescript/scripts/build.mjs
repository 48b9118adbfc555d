// Builds the package twice from one source: ES modules in dist/esm and CommonJS in dist/cjs
// (with a package.json that tells Node those files are CommonJS), each with its .d.ts files.
import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

rmSync(join(root, "dist"), { recursive: true, force: true });
for (const project of ["tsconfig.json", "tsconfig.cjs.json"]) {
  execFileSync(process.execPath, [tsc, "-p", join(root, project)], { stdio: "inherit", cwd: root });
}
writeFileSync(join(root, "dist/cjs/package.json"), JSON.stringify({ type: "commonjs" }) + "\n");
