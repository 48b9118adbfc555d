//! What every task that drives a running gateway shares: free loopback ports, one small HTTP
//! client, waiting for a file or a URL, and [`Demo`]: `cargo xtask demo` started in a directory
//! of its own, on free ports, ended with its whole process group when dropped.
//!
//! `api-contract`, `sdk-test` and `load` run against a [`Demo`]; `soak` starts and kills its
//! gateway itself but uses the same ports and HTTP helper.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};

use crate::{root, target_dir};

/// How long a demo may take to come up: it builds the gateway first when it is not built.
const DEMO_START_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A free loopback address, `127.0.0.1:<port>`.
pub fn free_addr() -> anyhow::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.to_string())
}

/// One HTTP/1.1 exchange on a connection of its own, with timeouts: (status, body). `Err` when
/// the peer is down or the answer is cut (a killed gateway).
pub fn http(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> anyhow::Result<(u16, String)> {
    let addr = base.trim_start_matches("http://");
    let mut stream =
        std::net::TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    let body = body.unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes())?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    let reply = String::from_utf8_lossy(&reply);
    let (head, rest) = reply.split_once("\r\n\r\n").context("a cut answer")?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no HTTP status in the answer to {method} {path}"))?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let text = if chunked {
        dechunk(rest)?
    } else {
        rest.to_owned()
    };
    Ok((status, text))
}

/// [`http`] with a JSON body and a JSON answer (a body that is not JSON comes back
/// as a JSON string).
pub fn http_json(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&serde_json::Value>,
) -> anyhow::Result<(u16, serde_json::Value)> {
    let body = body.map(serde_json::Value::to_string);
    let (status, text) = http(base, method, path, headers, body.as_deref())?;
    let value = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    Ok((status, value))
}

fn dechunk(mut rest: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").context("a cut chunk")?;
        let size = usize::from_str_radix(size.trim(), 16)?;
        if size == 0 {
            return Ok(out);
        }
        ensure!(after.len() >= size, "a cut chunk");
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
}

/// Waits until `path` exists and returns its text.
pub fn wait_for(path: &Path, timeout: Duration) -> anyhow::Result<String> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Ok(text) = std::fs::read_to_string(path) {
            return Ok(text);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bail!("{} did not appear within {timeout:?}", path.display())
}

/// Waits until `GET url` answers 200.
pub fn wait_http(url: &str, timeout: Duration) -> anyhow::Result<()> {
    let (base, path) = url
        .trim_start_matches("http://")
        .split_once('/')
        .map(|(a, p)| (format!("http://{a}"), format!("/{p}")))
        .context("a URL with a path")?;
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Ok((200, _)) = http(&base, "GET", &path, &[], None) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    bail!("{url} did not answer 200 within {timeout:?}")
}

/// A `cargo xtask demo` on free ports in `target/<name>`, ended with its whole process group
/// when dropped. `env` adds to the demo's environment (`PIXGW_DEMO_*` settings, gateway
/// `PIXGW_*` variables); `built` names a folder of binaries to run instead of building them
/// (`PIXGW_DEMO_BIN_DIR`).
pub struct Demo {
    child: Child,
    pub dir: PathBuf,
    env: Vec<(String, String)>,
}

impl Demo {
    pub fn start(name: &str, env: &[(&str, &str)], built: Option<&Path>) -> anyhow::Result<Demo> {
        use std::os::unix::process::CommandExt;
        let dir = target_dir().join(name);
        let env_file = dir.join("demo.env");
        let _ = std::fs::remove_file(&env_file);
        std::fs::create_dir_all(&dir)?;
        let log_path = dir.join("demo.log");
        let log = std::fs::File::create(&log_path)?;
        let child = Command::new(std::env::current_exe()?)
            .arg("demo")
            .current_dir(root())
            .env("PIXGW_DEMO_DIR", &dir)
            // Port 0: the demo picks the gateway's port after the simulator has bound its own
            // (it says which in demo.env).
            .env("PIXGW_LISTEN", "127.0.0.1:0")
            .env("PSP_SIM_ADDR", free_addr()?)
            .envs(env.iter().copied())
            .envs(built.map(|dir| ("PIXGW_DEMO_BIN_DIR", dir)))
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own group: the gateway and simulator it starts are ended with it.
            .process_group(0)
            .spawn()
            .context("starting cargo xtask demo")?;
        let mut demo = Demo {
            child,
            dir,
            env: Vec::new(),
        };
        eprintln!(
            "xtask: waiting for the {name} demo (log: {})",
            log_path.display()
        );
        let start = Instant::now();
        while !env_file.exists() {
            if let Some(status) = demo.child.try_wait()? {
                bail!(
                    "the {name} demo exited ({status}) before it was up; see {}",
                    log_path.display()
                );
            }
            ensure!(
                start.elapsed() < DEMO_START_TIMEOUT,
                "the {name} demo was not up within {DEMO_START_TIMEOUT:?}; see {}",
                log_path.display()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
        // demo.env is written in one call; read after a beat, it is whole.
        std::thread::sleep(Duration::from_millis(100));
        let text = std::fs::read_to_string(&env_file)
            .with_context(|| format!("reading {}", env_file.display()))?;
        demo.env = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
        for name in ["PIXGW_URL", "PIXGW_API_KEY", "PSP_SIM_URL"] {
            demo.var(name)?;
        }
        Ok(demo)
    }

    /// One variable of its `demo.env`.
    pub fn var(&self, name: &str) -> anyhow::Result<String> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .with_context(|| format!("{} lacks {name}", self.dir.join("demo.env").display()))
    }

    /// Every variable of its `demo.env`.
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-TERM", "--", &group])
            .stderr(std::process::Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Whatever is left of the group (usually nothing: the error is silenced).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}
