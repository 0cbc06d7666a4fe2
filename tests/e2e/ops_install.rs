//! Installing for real: shell completions from the binary, and the systemd
//! unit in config/ with the usual hardening (checked by `systemd-analyze
//! verify` in .ci/run where it is available).

use std::path::Path;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

#[tokio::test]
async fn completions_for_bash_zsh_and_fish_name_the_subcommands() {
    for (shell, marker) in [("bash", "complete -F"), ("zsh", "#compdef plangate"), ("fish", "complete -c plangate")] {
        let out = tokio::process::Command::new(BIN).args(["completions", shell]).output().await.expect("run");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{shell}");
        assert!(script.contains(marker), "{shell}: {}", &script[..script.len().min(300)]);
        for sub in ["serve", "backup", "restore", "prune", "completions"] {
            assert!(script.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    let out = tokio::process::Command::new(BIN).args(["completions", "powershell"]).output().await.expect("run");
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn the_systemd_unit_is_hardened() {
    let unit = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/plangate.service")).expect("unit");
    for line in [
        "User=plangate",
        "ProtectSystem=strict",
        "ReadWritePaths=/var/lib/plangate",
        "NoNewPrivileges=yes",
        "StateDirectory=plangate",
        "ExecStart=/usr/local/bin/plangate serve --config /etc/plangate/plangate.toml",
    ] {
        assert!(unit.lines().any(|l| l.starts_with(line)), "missing {line}");
    }
}
