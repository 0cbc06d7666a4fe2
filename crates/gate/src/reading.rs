//! What a call runs, read once: the command of a shell tool call, as
//! permission rules match it, cards show it and the risk line reads it.
//!
//! Harnesses name their shell tools differently and put the command in
//! different places: Claude Code's `Bash` and `PowerShell` take
//! `{"command": "…"}`, Codex's `exec_command` `{"cmd": "…"}` (its hook
//! renames it `Bash`), Codex's older `shell` an argv list (`["bash", "-lc",
//! "…"]`), OpenClaw's `exec` a string. A reading that knew only some of
//! them would let a grant for one command become a grant for the whole
//! tool (a session grant for `PowerShell` `Get-Date` allowing
//! `Remove-Item -Recurse`), so every such tool is a *command tool* here,
//! and its command is one string:
//!
//! * a string is taken as it is (a multi-line heredoc stays multi-line:
//!   an exact rule compares it whole);
//! * an argv list is joined the way a POSIX shell would read it back (each
//!   word that is not plain single-quoted), so `["sh", "-c", "rm -rf /"]`
//!   is `sh -c 'rm -rf /'`, never the four words `sh -c rm -rf /`;
//! * `command` and `cmd` that are both present must agree, else there is no
//!   command (the harness may run either: a rule cannot match such a call).
//!
//! [`is_posix_shell`] says whether the gate's strict tokenizer reads the
//! command the way the tool's shell does: PowerShell quotes and escapes
//! differently, so a PowerShell command is only ever matched exactly.

use serde_json::Value;

/// The tools whose input is a shell command, by exact name.
pub const COMMAND_TOOLS: &[&str] = &["exec", "bash", "Bash", "shell", "terminal", "exec_command", "PowerShell", "powershell", "pwsh"];

/// Whether `tool` runs a shell command ([`COMMAND_TOOLS`]).
pub fn is_command_tool(tool: &str) -> bool {
    COMMAND_TOOLS.contains(&tool)
}

/// Whether `tool`'s shell reads a command the way the gate's tokenizer
/// does (a POSIX shell), so word-by-word rules (`prefix:*`) can apply.
pub fn is_posix_shell(tool: &str) -> bool {
    is_command_tool(tool) && !matches!(tool, "PowerShell" | "powershell" | "pwsh")
}

/// The command a command tool call runs (see the module docs); `None` when
/// `tool` is not a command tool or its input holds no single command.
pub fn command(tool: &str, input: &Value) -> Option<String> {
    if !is_command_tool(tool) {
        return None;
    }
    let fields = input.as_object()?;
    let read = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(words) => words.iter().map(|w| w.as_str().map(quote)).collect::<Option<Vec<_>>>().map(|w| w.join(" ")),
        _ => None,
    };
    match (fields.get("command").map(read), fields.get("cmd").map(read)) {
        (Some(Some(c)), None) | (None, Some(Some(c))) => Some(c),
        (Some(Some(a)), Some(Some(b))) if a == b => Some(a),
        _ => None,
    }
}

/// `word` as a POSIX shell reads it back as one word: as it is when it is
/// plain, else in single quotes (a `'` inside written `'\''`).
pub fn quote(word: &str) -> String {
    let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:,+@%=".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_harness_command_is_one_string() {
        assert_eq!(command("Bash", &json!({"command": "git commit -m \"$(cat <<'EOF'\nx\nEOF\n)\""})).unwrap().lines().count(), 4);
        assert_eq!(command("exec_command", &json!({"cmd": "ls"})).as_deref(), Some("ls"));
        assert_eq!(command("shell", &json!({"command": ["sh", "-c", "rm -rf /"]})).as_deref(), Some("sh -c 'rm -rf /'"));
        assert_eq!(command("shell", &json!({"command": ["echo", "it's"]})).as_deref(), Some(r"echo 'it'\''s'"));
        assert_eq!(command("PowerShell", &json!({"command": "Get-Date"})).as_deref(), Some("Get-Date"));
        assert_eq!(command("Bash", &json!({"command": "a", "cmd": "b"})), None);
        assert_eq!(command("Bash", &json!({"command": "a", "cmd": "a"})).as_deref(), Some("a"));
        assert_eq!(command("Bash", &json!({"command": 5})), None);
        assert_eq!(command("Write", &json!({"command": "ls"})), None);
        assert!(is_posix_shell("Bash") && !is_posix_shell("PowerShell") && !is_posix_shell("Write"));
    }

    #[test]
    fn a_quoted_argv_reads_back_as_its_words() {
        // (A word with a `'` is quoted `'\''`, which a POSIX shell reads
        // back, but the gate's strict tokenizer refuses a backslash.)
        let words = ["sh", "-c", "rm -rf / ; echo x", "", "ünï"];
        let joined = words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
        let back = crate::simple_words(&joined).unwrap();
        assert_eq!(back, words);
    }
}
