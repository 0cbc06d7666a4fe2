//! Installing for real: shell completions from the binary, the systemd
//! unit in config/ with the usual hardening (checked by `systemd-analyze
//! verify` in .ci/run where it is available), and the trust Codex needs
//! before it runs plangate's hooks (`hook install codex --trust`, `doctor`).

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

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `plangate <args>` in `cwd` with Codex's config in `codex_home`.
async fn plangate_in(cwd: &Path, codex_home: &Path, args: &[&str]) -> Ran {
    let out = tokio::process::Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("CODEX_HOME", codex_home)
        .env("HOME", cwd)
        .env_remove("PLANGATE_HOOK_WAIT")
        .output()
        .await
        .expect("run");
    let ran = Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    eprintln!("plangate {args:?}: {}\n{}{}", ran.code, ran.stdout, ran.stderr);
    ran
}

/// Codex runs no hook the user has not trusted, silently: without `--trust`
/// the installer warns and `doctor` fails; `--trust` records each hook's key
/// and hash in Codex's `config.toml` (comments and permissions kept, the old
/// file backed up) and `doctor` passes; a re-install with another timeout
/// changes the hash, which both notice again.
#[cfg(unix)]
#[tokio::test]
async fn codex_hooks_are_trusted_with_trust_and_checked_by_doctor() {
    use std::os::unix::fs::PermissionsExt;
    let project = tempfile::tempdir().expect("project");
    let home = tempfile::tempdir().expect("codex home");
    let (cwd, codex_home) = (project.path(), home.path());
    let config = codex_home.join("config.toml");
    std::fs::write(&config, "# my Codex settings\nmodel = \"o3\" # keep me\n").expect("write");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let plangate_toml = cwd.join("plangate.toml");
    std::fs::write(&plangate_toml, "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"d\"\n").expect("write");
    let doctor = ["doctor", "--config", plangate_toml.to_str().expect("utf-8")];

    let ran = plangate_in(cwd, codex_home, &["hook", "install", "codex", "--scope", "user"]).await;
    assert_eq!(ran.code, 0);
    assert!(ran.stderr.contains("WARNING") && ran.stderr.contains("NOTHING IS GATED") && ran.stderr.contains("--trust"));
    assert_eq!(std::fs::read_to_string(&config).expect("read"), "# my Codex settings\nmodel = \"o3\" # keep me\n");
    let ran = plangate_in(cwd, codex_home, &doctor).await;
    assert_eq!(ran.code, 1);
    assert!(ran.stdout.contains("✗ codex hooks") && ran.stdout.contains("PreToolUse not trusted"));
    assert!(ran.stdout.contains("plangate hook install codex --scope user --trust"));

    let ran = plangate_in(cwd, codex_home, &["hook", "install", "codex", "--scope", "user", "--trust"]).await;
    assert_eq!(ran.code, 0);
    assert!(!ran.stderr.contains("WARNING"));
    let hooks_path = codex_home.join("hooks.json");
    let hooks: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&hooks_path).expect("read")).expect("JSON");
    let expected = plangate_agent::codex::trust::plangate_hooks(&hooks_path, &hooks);
    assert_eq!(expected.len(), 3);
    let written = std::fs::read_to_string(&config).expect("read");
    assert!(written.starts_with("# my Codex settings\nmodel = \"o3\" # keep me\n"), "{written}");
    let real_home = codex_home.canonicalize().expect("canonical");
    for hook in &expected {
        assert!(hook.key.starts_with(&real_home.join("hooks.json").display().to_string()), "{}", hook.key);
        let entry = format!("[hooks.state.\"{}\"]\ntrusted_hash = \"{}\"\n", hook.key, hook.hash);
        assert!(written.contains(&entry), "{written}");
        assert!(ran.stderr.contains(&format!("trusted {}: ", hook.event)));
    }
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&config), 0o600);
    let backups: Vec<_> = std::fs::read_dir(codex_home)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("config.toml.bak-")))
        .collect();
    assert_eq!(backups.len(), 1);
    assert_eq!(mode(&backups[0]), 0o600);
    let ran = plangate_in(cwd, codex_home, &doctor).await;
    assert_eq!(ran.code, 0);
    assert!(ran.stdout.contains("✓ codex hooks") && ran.stdout.contains("3 trusted"));
    let ran = plangate_in(cwd, codex_home, &["hook", "install", "codex", "--scope", "user", "--trust"]).await;
    assert!(ran.code == 0 && ran.stderr.contains("already trusts them"));

    // Another wait is another timeout, so another hash: Codex would ask again.
    let ran = plangate_in(cwd, codex_home, &["hook", "install", "codex", "--scope", "user", "--wait", "100"]).await;
    assert!(ran.code == 0 && ran.stderr.contains("WARNING") && ran.stderr.contains("changed since it was trusted"));
    let ran = plangate_in(cwd, codex_home, &doctor).await;
    assert!(ran.code == 1 && ran.stdout.contains("PreToolUse changed since it was trusted"));
}
