//! A loopback SMTP server that captures every message: enough of SMTP for
//! a sender (EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT; no TLS, no
//! login), and enough of MIME to read what was sent (multipart parts,
//! base64 and quoted-printable bodies, attachments' file names).

use base64::Engine;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One message as the server received it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub from: String,
    pub to: Vec<String>,
    /// The DATA, dot-stuffing undone, lines ending in CRLF.
    pub data: String,
}

/// One leaf part of a message, decoded.
#[derive(Debug, Clone)]
pub struct Part {
    /// Lower case, without parameters: `text/plain`.
    pub content_type: String,
    /// From `Content-Disposition`, if it names one.
    pub file_name: Option<String>,
    pub body: String,
}

impl Captured {
    /// A header of the message (its first), unfolded; empty if absent.
    pub fn header(&self, name: &str) -> String {
        let (headers, _) = split_entity(&self.data);
        headers.get(&name.to_ascii_lowercase()).cloned().unwrap_or_default()
    }

    /// Every leaf part, decoded, in order.
    pub fn parts(&self) -> Vec<Part> {
        let mut out = Vec::new();
        leaves(&self.data, &mut out);
        out
    }

    /// The body of the first part of `content_type` (`text/plain`, `text/html`).
    pub fn body(&self, content_type: &str) -> String {
        self.parts().into_iter().find(|p| p.content_type == content_type).map(|p| p.body).unwrap_or_default()
    }

    /// The first part with a file name.
    pub fn attachment(&self) -> Option<Part> {
        self.parts().into_iter().find(|p| p.file_name.is_some())
    }
}

/// Headers (names in lower case, values unfolded) and body of a MIME entity.
fn split_entity(entity: &str) -> (HashMap<String, String>, &str) {
    let (head, body) = entity.split_once("\r\n\r\n").unwrap_or((entity, ""));
    let mut headers: HashMap<String, String> = HashMap::new();
    let mut last: Option<String> = None;
    for line in head.split("\r\n") {
        if line.starts_with([' ', '\t']) {
            if let Some(value) = last.as_ref().and_then(|name| headers.get_mut(name)) {
                value.push(' ');
                value.push_str(line.trim());
            }
        } else if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            headers.entry(name.clone()).or_insert_with(|| value.trim().to_string());
            last = Some(name);
        }
    }
    (headers, body)
}

/// The value of parameter `name` in a header value (`…; boundary="x"`).
fn parameter(value: &str, name: &str) -> Option<String> {
    value.split(';').skip(1).find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        (k.trim().eq_ignore_ascii_case(name)).then(|| v.trim().trim_matches('"').to_string())
    })
}

fn leaves(entity: &str, out: &mut Vec<Part>) {
    let (headers, body) = split_entity(entity);
    let content_type = headers.get("content-type").cloned().unwrap_or_else(|| "text/plain".into());
    let kind = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if kind.starts_with("multipart/") {
        let Some(boundary) = parameter(&content_type, "boundary") else { return };
        let delimiter = format!("--{boundary}");
        for chunk in body.split(delimiter.as_str()).skip(1) {
            if chunk.starts_with("--") {
                break;
            }
            let chunk = chunk.strip_prefix("\r\n").unwrap_or(chunk);
            leaves(chunk.strip_suffix("\r\n").unwrap_or(chunk), out);
        }
        return;
    }
    let encoding = headers.get("content-transfer-encoding").map(|e| e.to_ascii_lowercase()).unwrap_or_default();
    let bytes = match encoding.as_str() {
        "base64" => {
            let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
            base64::engine::general_purpose::STANDARD.decode(compact).unwrap_or_default()
        }
        "quoted-printable" => quoted_printable(body),
        _ => body.as_bytes().to_vec(),
    };
    let file_name = headers.get("content-disposition").and_then(|d| parameter(d, "filename"));
    out.push(Part { content_type: kind, file_name, body: String::from_utf8_lossy(&bytes).into_owned() });
}

fn quoted_printable(body: &str) -> Vec<u8> {
    let text = body.replace("=\r\n", "");
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'=', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

struct Shared {
    captured: Mutex<Vec<Captured>>,
    changed: watch::Sender<u64>,
    /// How many more `MAIL` commands to refuse (451, try later).
    refusing: AtomicUsize,
    /// How many more `MAIL` commands never to answer, and how many were not.
    holding: AtomicUsize,
    held: AtomicUsize,
}

/// The server; stops serving when dropped.
pub struct FakeSmtp {
    port: u16,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

impl Drop for FakeSmtp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeSmtp {
    /// Bind 127.0.0.1:0 and accept every sender and recipient.
    pub async fn start() -> FakeSmtp {
        let shared = Arc::new(Shared {
            captured: Mutex::new(Vec::new()),
            changed: watch::channel(0).0,
            refusing: AtomicUsize::new(0),
            holding: AtomicUsize::new(0),
            held: AtomicUsize::new(0),
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind fake SMTP");
        let port = listener.local_addr().expect("local addr").port();
        let serving = shared.clone();
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(converse(stream, serving.clone()));
            }
        });
        FakeSmtp { port, shared, server }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// An `[email]` section sending here (plain SMTP on loopback) from
    /// `plangate@example.com`, links to `public_url`, `approvers` as
    /// `(identity, address)`.
    pub fn section(&self, public_url: &str, approvers: &[(&str, &str)]) -> String {
        let mut out = format!(
            "\n[email]\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {}\ntls = \"none\"\nfrom = \"plangate <plangate@example.com>\"\npublic_url = \"{public_url}\"\n\n[email.approvers]\n",
            self.port
        );
        for (identity, address) in approvers {
            out.push_str(&format!("\"{identity}\" = \"{address}\"\n"));
        }
        out
    }

    /// Refuse the next `n` messages at `MAIL` with a temporary failure (451).
    pub fn refuse_next(&self, n: usize) {
        self.shared.refusing.store(n, Ordering::SeqCst);
    }

    /// Never answer the next `n` messages' `MAIL` (a server that hangs
    /// mid-conversation); [`wait_held`](Self::wait_held) sees them arrive.
    pub fn hold_next(&self, n: usize) {
        self.shared.holding.store(n, Ordering::SeqCst);
    }

    /// Wait until `n` conversations are held.
    pub async fn wait_held(&self, n: usize, within: Duration) {
        let failure = || format!("fake SMTP: {} of {n} conversations held after {within:?}", self.shared.held.load(Ordering::SeqCst));
        crate::wait::until(&self.shared.changed, within, || (self.shared.held.load(Ordering::SeqCst) >= n).then_some(()), failure).await
    }

    /// Every message so far, in arrival order.
    pub fn captured(&self) -> Vec<Captured> {
        self.shared.captured.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Wait until `check` finds what it looks for in the messages so far.
    pub async fn wait_for<T>(&self, within: Duration, what: &str, mut check: impl FnMut(&[Captured]) -> Option<T>) -> T {
        let failure = || format!("fake SMTP: still not true after {within:?}: {what}; got {:#?}", self.captured());
        crate::wait::until(&self.shared.changed, within, || check(&self.captured()), failure).await
    }
}

/// One SMTP conversation.
async fn converse(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    let _ = write.write_all(b"220 fake-smtp ESMTP\r\n").await;
    let (mut from, mut to) = (String::new(), Vec::new());
    let mut line = String::new();
    loop {
        line.clear();
        if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let command = line.trim_end().to_string();
        let verb = command.split([' ', ':']).next().unwrap_or_default().to_ascii_uppercase();
        let reply: &str = match verb.as_str() {
            "EHLO" => "250-fake-smtp\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n",
            "HELO" => "250 fake-smtp\r\n",
            "MAIL" if shared.holding.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() => {
                shared.held.fetch_add(1, Ordering::SeqCst);
                shared.changed.send_modify(|n| *n += 1);
                return std::future::pending().await;
            }
            "MAIL" if shared.refusing.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() => {
                "451 4.3.0 try again later\r\n"
            }
            "MAIL" => {
                from = address(&command);
                "250 OK\r\n"
            }
            "RCPT" => {
                to.push(address(&command));
                "250 OK\r\n"
            }
            "DATA" => {
                let _ = write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await;
                let mut data = String::new();
                loop {
                    line.clear();
                    if lines.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    data.push_str(line.strip_prefix('.').filter(|_| line.starts_with("..")).unwrap_or(line.as_str()));
                }
                let message = Captured { from: std::mem::take(&mut from), to: std::mem::take(&mut to), data };
                shared.captured.lock().unwrap_or_else(|e| e.into_inner()).push(message);
                shared.changed.send_modify(|n| *n += 1);
                "250 OK queued\r\n"
            }
            "RSET" => {
                from.clear();
                to.clear();
                "250 OK\r\n"
            }
            "NOOP" => "250 OK\r\n",
            "QUIT" => {
                let _ = write.write_all(b"221 bye\r\n").await;
                return;
            }
            _ => "502 not implemented\r\n",
        };
        if write.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The address of `MAIL FROM:<a@b> …` or `RCPT TO:<a@b>`.
fn address(command: &str) -> String {
    let start = command.find('<').map_or(0, |i| i + 1);
    let end = command[start..].find('>').map_or(command.len(), |i| start + i);
    command[start..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_parts_are_found_and_decoded() {
        let data = "Subject: hi\r\nContent-Type: multipart/mixed;\r\n boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nlong=\r\n line =C3=A9\r\n--b1\r\nContent-Type: text/markdown\r\nContent-Disposition: attachment; filename=\"p.md\"\r\nContent-Transfer-Encoding: base64\r\n\r\nIyBQbGFu\r\n--b1--\r\n";
        let c = Captured { from: "a".into(), to: vec![], data: data.into() };
        assert_eq!(c.header("subject"), "hi");
        assert_eq!(c.body("text/plain"), "long line é");
        let attached = c.attachment().expect("attachment");
        assert_eq!((attached.file_name.as_deref(), attached.body.as_str()), (Some("p.md"), "# Plan"));
    }
}
