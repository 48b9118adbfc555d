// Generates src/generated/openapi.ts from the OpenAPI document of a running gateway.
//
//   npm run generate-types   writes the file
//   npm run check-types      fails when the checked-in file differs from what the gateway serves
//
// The gateway is $PIXGW_URL, or the one `cargo xtask demo` wrote into target/demo/demo.env.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const target = join(root, "src/generated/openapi.ts");
const check = process.argv.includes("--check");

function gatewayUrl() {
  if (process.env.PIXGW_URL) return process.env.PIXGW_URL;
  const demoEnv = join(root, "../../target/demo/demo.env");
  try {
    const line = readFileSync(demoEnv, "utf8").split("\n").find((l) => l.startsWith("PIXGW_URL="));
    if (line) return line.slice("PIXGW_URL=".length).trim();
  } catch {
    // No demo running: said below.
  }
  console.error("No gateway to read the OpenAPI document from: set PIXGW_URL, or run `cargo xtask demo`.");
  process.exit(2);
}

const url = `${gatewayUrl().replace(/\/+$/, "")}/v1/openapi.json`;
const response = await fetch(url);
if (!response.ok) {
  console.error(`GET ${url} answered ${response.status}`);
  process.exit(2);
}
const document = await response.json();
const ast = await openapiTS(document, { alphabetize: true, exportType: false });
const header =
  "// Generated from the gateway's OpenAPI document (GET /v1/openapi.json) by\n" +
  "// `npm run generate-types`. Do not edit: regenerate; `npm run check-types` fails when it is stale.\n\n";
const generated = header + astToString(ast);

if (check) {
  let current = "";
  try {
    current = readFileSync(target, "utf8");
  } catch {
    // Missing counts as stale.
  }
  if (current !== generated) {
    console.error(
      `src/generated/openapi.ts is not what ${url} describes: the API changed. ` +
        "Run `npm run generate-types` in sdks/typescript against the current gateway and commit the result " +
        "(then fix any type error the change causes in src/).",
    );
    process.exit(1);
  }
  console.log(`src/generated/openapi.ts matches ${url}`);
} else {
  writeFileSync(target, generated);
  console.log(`wrote src/generated/openapi.ts from ${url}`);
}
