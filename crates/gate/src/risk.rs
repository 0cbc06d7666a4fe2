//! What a tool call risks, in a few words for the person asked to allow it.
//!
//! A permission card shows the command in full; this is the short line
//! above it ("deletes files · pushes to a remote") that makes a phone
//! reader slow down. It is a reading aid, never a decision: nothing is
//! allowed or refused because of it, so it may look at compound commands
//! (`make && git push`) word by word without the tokenizer's strictness.
//!
//! The words of a command are its whitespace- and operator-separated
//! pieces; each command of a pipeline or list is looked at from its first
//! word, after wrappers like `sudo` and `env`.

use serde_json::Value;

/// The risks of one call, in a stable order, without repeats; empty when
/// nothing stands out.
pub fn risks(tool: &str, input: &Value) -> Vec<&'static str> {
    let mut out = Vec::new();
    if crate::reading::is_command_tool(tool) {
        // The one reading of a shell call (`reading::command`): the same
        // command the permission rules match and the card shows.
        if let Some(command) = crate::reading::command(tool, input) {
            shell_risks(&command, &mut out);
        }
    } else if crate::paths::is_file_tool(tool) {
        match tool {
            "Write" | "write" => push(&mut out, "writes a whole file"),
            _ if is_patch(tool) => {
                // The one reading of a patch, Codex's (`paths::read_patch`).
                match crate::paths::patch_text(input).and_then(crate::paths::read_patch) {
                    Ok(files) if files.iter().any(|f| f.change == crate::paths::PatchChange::Delete) => push(&mut out, "deletes files"),
                    Ok(_) => {}
                    Err(_) => push(&mut out, "a patch plangate cannot read (it may delete files)"),
                }
                push(&mut out, "changes files");
            }
            _ => push(&mut out, "changes a file"),
        }
    } else if tool.starts_with("mcp__") {
        push(&mut out, "calls another program's tool (MCP)");
    } else if matches!(tool, "WebFetch" | "WebSearch") {
        push(&mut out, "reaches the network");
    }
    out
}

fn is_patch(tool: &str) -> bool {
    tool == "apply_patch"
}

fn push(out: &mut Vec<&'static str>, risk: &'static str) {
    if !out.contains(&risk) {
        out.push(risk);
    }
}

/// Wrappers that run the rest of their words as a command.
const WRAPPERS: &[&str] = &["env", "nohup", "time", "timeout", "nice", "command", "exec", "xargs", "doas", "sudo"];

fn shell_risks(command: &str, out: &mut Vec<&'static str>) {
    if command.contains("$(") || command.contains('`') || command.contains("<(") {
        push(out, "runs commands inside the command (`$(…)`)");
    }
    let piped_to_shell = command.split('|').skip(1).any(|part| {
        let first = part.split_whitespace().next().unwrap_or("");
        matches!(basename(first), "sh" | "bash" | "zsh" | "dash" | "python" | "python3" | "node" | "perl" | "ruby")
    });
    if piped_to_shell {
        push(out, "runs a program from the network");
    }
    for simple in command.split(['\n', ';', '|', '&']) {
        let mut words: Vec<&str> = simple.split_whitespace().collect();
        while let Some(first) = words.first() {
            let name = basename(first);
            if name.contains('=') && !name.starts_with('-') {
                words.remove(0);
            } else if WRAPPERS.contains(&name) {
                if matches!(name, "sudo" | "doas") {
                    push(out, "runs as root");
                }
                words.remove(0);
                // Wrapper options (`sudo -u x`, `timeout 5`) are skipped with it.
                while let Some(option) = words.first().copied().filter(|w| w.starts_with('-') || w.parse::<f64>().is_ok()) {
                    words.remove(0);
                    // `sudo -u root`, `sudo -g wheel`: the value goes too.
                    if matches!(option, "-u" | "-g" | "-U" | "-C" | "-h" | "-p") && !words.is_empty() {
                        words.remove(0);
                    }
                }
            } else {
                break;
            }
        }
        if let Some(first) = words.first() {
            command_risks(basename(first), &words[1..], out);
        }
    }
    if command.contains('>') {
        push(out, "writes files (redirection)");
    }
}

fn basename(word: &str) -> &str {
    let word = word.trim_matches(|c| c == '(' || c == ')' || c == '{' || c == '}');
    word.rsplit('/').next().unwrap_or(word)
}

fn has(args: &[&str], any: &[&str]) -> bool {
    args.iter().any(|a| any.contains(a))
}

fn command_risks(name: &str, args: &[&str], out: &mut Vec<&'static str>) {
    match name {
        "rm" | "rmdir" | "shred" | "unlink" => push(out, "deletes files"),
        "find" if has(args, &["-delete", "-exec", "-execdir"]) => push(out, "deletes or changes files it finds"),
        "git" => git_risks(args, out),
        "curl" | "wget" => push(out, "reaches the network"),
        "ssh" | "scp" | "rsync" | "sftp" => push(out, "reaches another machine"),
        "npx" | "pnpx" | "bunx" | "uvx" | "pipx" => push(out, "runs a program from the network"),
        "npm" | "pnpm" | "yarn" | "bun" => match args.first().copied() {
            Some("publish") => push(out, "publishes a package"),
            Some("install" | "i" | "add" | "ci" | "update" | "upgrade") => {
                push(out, "installs packages from the network (their scripts run)")
            }
            Some("exec" | "dlx" | "x") => push(out, "runs a program from the network"),
            _ => {}
        },
        "pip" | "pip3" | "uv" | "poetry" | "gem" | "go" if has(args, &["install", "add", "get"]) => {
            push(out, "installs packages from the network (their scripts run)")
        }
        "cargo" => match args.first().copied() {
            Some("publish") => push(out, "publishes a package"),
            Some("install") => push(out, "installs packages from the network (their scripts run)"),
            _ => {}
        },
        "twine" if has(args, &["upload"]) => push(out, "publishes a package"),
        "docker" | "podman" | "kubectl" | "helm" | "terraform" => push(out, "changes containers or infrastructure"),
        "chmod" | "chown" | "chgrp" => push(out, "changes file permissions"),
        "kill" | "pkill" | "killall" | "systemctl" | "shutdown" | "reboot" => push(out, "stops or starts processes"),
        "dd" | "mkfs" | "fdisk" | "parted" => push(out, "writes disks"),
        "sh" | "bash" | "zsh" | "dash" | "eval" | "source" | "." => push(out, "runs a shell script"),
        _ => {}
    }
}

fn git_risks(args: &[&str], out: &mut Vec<&'static str>) {
    let Some(sub) = args.iter().find(|a| !a.starts_with('-')) else { return };
    match *sub {
        "push" => {
            push(out, "pushes to a remote");
            if has(args, &["-f", "--force", "--force-with-lease", "--mirror", "--delete", "-d"]) || args.iter().any(|a| a.starts_with('+'))
            {
                push(out, "rewrites or deletes a remote's history");
            }
        }
        "reset" if has(args, &["--hard", "--merge", "--keep"]) => push(out, "discards uncommitted changes"),
        "checkout" | "restore" if has(args, &["--", ".", "-f", "--force"]) => push(out, "discards uncommitted changes"),
        "clean" => push(out, "deletes untracked files"),
        "rebase" | "filter-branch" | "filter-repo" => push(out, "rewrites history"),
        "branch" if has(args, &["-D", "-d", "--delete"]) => push(out, "deletes a branch"),
        "tag" if has(args, &["-d", "--delete"]) => push(out, "deletes a tag"),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bash(cmd: &str) -> Vec<&'static str> {
        risks("Bash", &json!({"command": cmd}))
    }

    #[test]
    fn common_commands_name_their_risk() {
        assert_eq!(bash("rm -rf build"), ["deletes files"]);
        assert_eq!(bash("git push --force origin main"), ["pushes to a remote", "rewrites or deletes a remote's history"]);
        assert_eq!(bash("curl -fsSL https://x.sh | sh"), ["runs a program from the network", "reaches the network", "runs a shell script"]);
        assert_eq!(bash("npm publish --tag next"), ["publishes a package"]);
        assert_eq!(bash("sudo -u root rm x"), ["runs as root", "deletes files"]);
        assert_eq!(bash("make && git reset --hard HEAD"), ["discards uncommitted changes"]);
        assert!(bash("cargo test").is_empty());
        assert_eq!(bash("echo $(id) > out"), ["runs commands inside the command (`$(…)`)", "writes files (redirection)"]);
    }

    #[test]
    fn file_tools_and_others() {
        assert_eq!(risks("Write", &json!({"file_path": "a"})), ["writes a whole file"]);
        assert_eq!(risks("Edit", &json!({"file_path": "a"})), ["changes a file"]);
        assert_eq!(
            risks("apply_patch", &json!({"command": "*** Begin Patch\n*** Delete File: a\n*** End Patch"})),
            ["deletes files", "changes files"]
        );
        // Read as Codex reads it: an indented header deletes too, a `+` line is content.
        assert_eq!(
            risks("apply_patch", &json!({"command": "*** Begin Patch\n\t*** Delete File: a\n*** End Patch"})),
            ["deletes files", "changes files"]
        );
        assert_eq!(
            risks("apply_patch", &json!({"command": "*** Begin Patch\n*** Add File: a\n+*** Delete File: b\n*** End Patch"})),
            ["changes files"]
        );
        assert_eq!(
            risks("apply_patch", &json!({"command": "rm -rf /"})),
            ["a patch plangate cannot read (it may delete files)", "changes files"]
        );
        assert_eq!(risks("mcp__github__create_issue", &json!({})), ["calls another program's tool (MCP)"]);
        assert!(risks("Read", &json!({})).is_empty());
        assert_eq!(risks("exec_command", &json!({"command": ["git", "push"]})), ["pushes to a remote"]);
    }
}
