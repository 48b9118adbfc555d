//! The `psp-sim` binary: writes the info file, prints its ready line, stops on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn binary_writes_info_and_stops_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("psp-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let info_file = dir.join("sim.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_psp-sim"))
        .args(["--control-addr", "127.0.0.1:0", "--info-file"])
        .arg(&info_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let control_url = line
        .trim()
        .strip_prefix("psp-sim ready ")
        .expect(&line)
        .to_string();
    assert!(control_url.starts_with("http://127.0.0.1:"));

    let info: psp_sim::SimInfo =
        serde_json::from_slice(&std::fs::read(&info_file).unwrap()).unwrap();
    assert_eq!(info.control_url, control_url);
    assert!(info.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    let efi = &info.providers["efi"];
    assert!(efi.endpoints["api"].starts_with("https://localhost:"));
    for field in ["client-id", "client-secret", "pix-key", "certificate"] {
        assert!(efi.credentials.contains_key(field), "{field}");
    }

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "psp-sim did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "{exit:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
