// What the suites need around the SDK: a gateway and PSP simulator to talk to, the simulator's
// control API, a local webhook receiver, and polling with a deadline.
//
// The gateway is the one named by PIXGW_URL, PIXGW_API_KEY and PSP_SIM_URL (as `cargo xtask
// sdk-test` sets them from its demo); without them, `cargo xtask demo` is started here on free
// ports, in a directory of its own, and stopped when the suite ends.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "../../..");

/** Polls `probe` until it returns something other than undefined, or fails at the deadline. */
export async function eventually(what, probe, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function freePort() {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  return port;
}

function parseEnv(text) {
  return Object.fromEntries(
    text
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).trim()]),
  );
}

/** `{ url, apiKey, simUrl, stop() }` of a running demo. */
export async function startGateway() {
  const { PIXGW_URL, PIXGW_API_KEY, PSP_SIM_URL } = process.env;
  if (PIXGW_URL && PIXGW_API_KEY && PSP_SIM_URL) {
    return { url: PIXGW_URL, apiKey: PIXGW_API_KEY, simUrl: PSP_SIM_URL, stop: async () => {} };
  }
  const dir = mkdtempSync(join(tmpdir(), "pixgw-sdk-ts-"));
  const child = spawn("cargo", ["xtask", "demo"], {
    cwd: repo,
    detached: true, // a process group of its own: the gateway and simulator end with it
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      ...process.env,
      PIXGW_DEMO_DIR: dir,
      PIXGW_LISTEN: `127.0.0.1:${await freePort()}`,
      PSP_SIM_ADDR: `127.0.0.1:${await freePort()}`,
    },
  });
  let exited = null;
  child.on("exit", (code) => (exited = code));
  const stop = async () => {
    if (exited !== null) return;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      return;
    }
    await eventually("the demo to stop", () => (exited !== null ? true : undefined), 15_000).catch(() =>
      process.kill(-child.pid, "SIGKILL"),
    );
  };
  const envFile = join(dir, "demo.env");
  try {
    await eventually(
      "cargo xtask demo to write demo.env",
      () => {
        if (exited !== null) throw new Error(`cargo xtask demo exited with ${exited} before it was up`);
        return existsSync(envFile) ? true : undefined;
      },
      30 * 60_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  await new Promise((r) => setTimeout(r, 100)); // written in one call: whole after a beat
  const env = parseEnv(readFileSync(envFile, "utf8"));
  return { url: env.PIXGW_URL, apiKey: env.PIXGW_API_KEY, simUrl: env.PSP_SIM_URL, stop };
}

/** The simulator's control API. */
export function simulator(simUrl) {
  const call = async (method, path, body) => {
    const response = await fetch(simUrl + path, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} at the simulator: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return {
    pay: (provider, reference) => call("POST", "/_sim/pay", { provider, reference }),
    faults: (body) => call("POST", "/_sim/faults", body),
    charges: (provider) => call("GET", `/_sim/charges?provider=${encodeURIComponent(provider)}`),
  };
}

/** A local HTTP server recording every delivery: `{ url, deliveries, close() }`. */
export async function webhookReceiver() {
  const deliveries = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      deliveries.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${server.address().port}/pixgw-events`,
    deliveries,
    close: () => new Promise((r) => server.close(r)),
  };
}
