//! `plangate doctor`: a configuration checked against the live platform
//! APIs, run by the operator before (or instead of) a first start. Each
//! check is one line: ✓ or ✗, what was checked, and on failure what to do.
//!
//! Telegram is checked whole: the token (`getMe`), each destination chat
//! (`getChat`: it exists and the bot can see it, so it is in it) and each
//! approver (`getChatMember`: a member of that chat). Slack and Discord:
//! the token only (`auth.test`, `GET /users/@me`); their chats and
//! approvers are not checked yet.
//!
//! With `[store] backend = "postgres"`, the database comes first: plangate
//! connects and says hello in PostgreSQL's own protocol (a startup message
//! for the configured user and database), so a wrong host, a database or
//! role that does not exist, or a `pg_hba.conf` that refuses this machine
//! is named here rather than at the first start. The password is not
//! checked (the server asks for it; that is as far as the probe goes), and
//! nothing is created.

use crate::config::Settings;
use serde_json::{json, Value};

/// One check's outcome.
pub struct Check {
    pub ok: bool,
    pub what: String,
    pub detail: String,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", if self.ok { "✓" } else { "✗" }, self.what, self.detail)
    }
}

fn text(section: &Value, key: &str) -> String {
    section.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Call a Bot API method; `Ok(result)` or `Err(description)`.
async fn telegram(http: &reqwest::Client, base: &str, token: &str, method: &str, body: Value) -> Result<Value, String> {
    let url = format!("{}/bot{token}/{method}", base.trim_end_matches('/'));
    let resp = http.post(url).json(&body).send().await.map_err(|e| format!("cannot reach {base}: {}", e.without_url()))?;
    let value: Value = resp.json().await.map_err(|e| format!("unreadable answer: {e}"))?;
    if value["ok"] == true {
        Ok(value["result"].clone())
    } else {
        Err(value["description"].as_str().unwrap_or("refused").to_string())
    }
}

/// Run every check of `settings`.
pub async fn run(settings: &Settings) -> Vec<Check> {
    let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(15)).build().unwrap_or_default();
    let raw = &settings.raw;
    let mut checks = Vec::new();
    if let Some(section) = &raw.telegram {
        let base = Some(text(section, "api_url")).filter(|u| !u.is_empty()).unwrap_or_else(|| "https://api.telegram.org".into());
        let token = text(section, "token");
        match telegram(&http, &base, &token, "getMe", json!({})).await {
            Ok(me) => checks.push(Check {
                ok: true,
                what: "telegram.token".into(),
                detail: format!("works (bot @{})", me["username"].as_str().unwrap_or("?")),
            }),
            Err(e) => {
                checks.push(Check { ok: false, what: "telegram.token".into(), detail: format!("{e}; copy the token from @BotFather") });
                return checks; // nothing else can be checked with a token that does not work
            }
        }
        for (name, d) in raw.destinations.iter().filter(|(_, d)| d.channel == "telegram") {
            match telegram(&http, &base, &token, "getChat", json!({"chat_id": d.chat})).await {
                Ok(chat) => checks.push(Check {
                    ok: true,
                    what: format!("destinations.{name}.chat"),
                    detail: format!(
                        "{} resolves to {:?}, and the bot is in it",
                        d.chat,
                        chat["title"].as_str().unwrap_or("a private chat")
                    ),
                }),
                Err(e) => {
                    checks.push(Check {
                        ok: false,
                        what: format!("destinations.{name}.chat"),
                        detail: format!("{}: {e}; add the bot to the chat, then send /plan there to see its id", d.chat),
                    });
                    continue;
                }
            }
            for (i, approver) in d.approvers.iter().enumerate() {
                let user = approver.strip_prefix("telegram:").unwrap_or(approver);
                let what = format!("destinations.{name}.approvers[{i}]");
                match telegram(&http, &base, &token, "getChatMember", json!({"chat_id": d.chat, "user_id": user})).await {
                    Ok(m) if !matches!(m["status"].as_str(), Some("left" | "kicked")) => checks.push(Check {
                        ok: true,
                        what,
                        detail: format!("{approver} is in the chat ({})", m["user"]["first_name"].as_str().unwrap_or("?")),
                    }),
                    Ok(m) => checks.push(Check {
                        ok: false,
                        what,
                        detail: format!("{approver} is not in the chat ({}); invite them", m["status"].as_str().unwrap_or("?")),
                    }),
                    Err(e) => checks.push(Check {
                        ok: false,
                        what,
                        detail: format!("{approver}: {e}; the user id is what /plan in the chat shows them"),
                    }),
                }
            }
        }
    }
    if let Some(section) = &raw.slack {
        let base = Some(text(section, "api_url")).filter(|u| !u.is_empty()).unwrap_or_else(|| "https://slack.com/api".into());
        let answer = http.post(format!("{}/auth.test", base.trim_end_matches('/'))).bearer_auth(text(section, "bot_token")).send().await;
        let value: Value = match answer {
            Ok(r) => r.json().await.unwrap_or_default(),
            Err(e) => json!({"ok": false, "error": format!("cannot reach {base}: {}", e.without_url())}),
        };
        let ok = value["ok"] == true;
        let detail = if ok {
            format!("works (team {})", value["team_id"].as_str().unwrap_or("?"))
        } else {
            format!("{}; copy the bot token (xoxb-…) from the app's OAuth page", value["error"].as_str().unwrap_or("refused"))
        };
        checks.push(Check { ok, what: "slack.bot_token".into(), detail });
    }
    if let Some(section) = &raw.discord {
        let base = Some(text(section, "api_url")).filter(|u| !u.is_empty()).unwrap_or_else(|| "https://discord.com".into());
        let token = text(section, "bot_token");
        let token = token.strip_prefix("Bot ").unwrap_or(&token).to_string();
        let answer = http
            .get(format!("{}/api/v10/users/@me", base.trim_end_matches('/')))
            .header("Authorization", format!("Bot {token}"))
            .send()
            .await;
        let (ok, detail) = match answer {
            Ok(r) if r.status().is_success() => (true, "works".to_string()),
            Ok(r) => (false, format!("refused ({}); reset the bot token in the developer portal", r.status())),
            Err(e) => (false, format!("cannot reach {base}: {}", e.without_url())),
        };
        checks.push(Check { ok, what: "discord.bot_token".into(), detail });
    }
    checks
}

/// How long the PostgreSQL probe may take.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Where a PostgreSQL URL points: host (or a Unix socket directory), port,
/// user and database, with libpq's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgTarget {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub database: String,
}

impl std::fmt::Display for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.starts_with('/') {
            write!(f, "{}/.s.PGSQL.{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Parse a `postgres://` URL or a `key=value` string (the forms
/// `store.postgres_url` takes). The user defaults to `$USER`, the database
/// to the user, as libpq does.
pub fn pg_target(url: &str) -> Result<PgTarget, String> {
    let default_user = || std::env::var("USER").unwrap_or_else(|_| "postgres".into());
    let mut host = String::new();
    let mut port: Option<String> = None;
    let mut user = String::new();
    let mut database = String::new();
    let decode = |s: &str| -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match (bytes[i], bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok())) {
                (b'%', Some(b)) => {
                    out.push(b);
                    i += 3;
                }
                (b, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL ({e})"))?;
        host = parsed.host_str().map(|h| decode(h.trim_start_matches('[').trim_end_matches(']'))).unwrap_or_default();
        port = parsed.port().map(|p| p.to_string());
        user = decode(parsed.username());
        database = decode(parsed.path().trim_start_matches('/'));
        pairs.extend(parsed.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())));
    } else {
        for pair in url.split_whitespace() {
            let (k, v) = pair.split_once('=').ok_or_else(|| format!("{pair:?} is not key=value"))?;
            pairs.push((k.to_string(), v.trim_matches('\'').to_string()));
        }
    }
    for (k, v) in pairs {
        match k.as_str() {
            "host" | "hostaddr" => host = v,
            "port" => port = Some(v),
            "user" => user = v,
            "dbname" => database = v,
            _ => {}
        }
    }
    // Several hosts (failover lists): the first.
    let host = host.split(',').next().unwrap_or_default().to_string();
    if host.is_empty() {
        return Err("no host".into());
    }
    let port = match port.as_deref().and_then(|p| p.split(',').next()) {
        None | Some("") => 5432,
        Some(p) => p.parse().map_err(|_| format!("port {p:?} is not a number"))?,
    };
    let user = if user.is_empty() { default_user() } else { user };
    let database = if database.is_empty() { user.clone() } else { database };
    Ok(PgTarget { host, port, user, database })
}

/// What a PostgreSQL server said to a startup message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PgHello {
    /// In, without a password (trust).
    Accepted,
    /// It asks for a password (which the probe does not send).
    WantsPassword,
    /// It refused: its message and SQLSTATE code.
    Refused { message: String, code: String },
}

/// Say hello to the PostgreSQL server at `target` (PROTOCOL 3.0 startup
/// message), read its first answer, and say goodbye.
pub async fn pg_hello(target: &PgTarget) -> Result<PgHello, String> {
    let hello = async {
        if target.host.starts_with('/') {
            #[cfg(unix)]
            {
                let path = format!("{}/.s.PGSQL.{}", target.host, target.port);
                let stream = tokio::net::UnixStream::connect(&path).await.map_err(|e| format!("cannot connect to {path}: {e}"))?;
                return startup(stream, target).await;
            }
            #[cfg(not(unix))]
            return Err("Unix sockets are not supported on this platform".to_string());
        }
        let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
            .await
            .map_err(|e| format!("cannot connect to {target}: {e}"))?;
        startup(stream, target).await
    };
    tokio::time::timeout(PROBE_TIMEOUT, hello).await.map_err(|_| format!("no answer from {target} within {} s", PROBE_TIMEOUT.as_secs()))?
}

async fn startup<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(mut stream: S, target: &PgTarget) -> Result<PgHello, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut body = Vec::new();
    body.extend_from_slice(&196_608i32.to_be_bytes()); // protocol 3.0
    for (k, v) in [("user", &target.user), ("database", &target.database), ("application_name", &"plangate doctor".to_string())] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut message = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    message.extend_from_slice(&body);
    let io = |e: std::io::Error| format!("talking to {target}: {e}");
    stream.write_all(&message).await.map_err(io)?;
    // Trust lets the user in (R 0) before the database is opened, which
    // may still fail (E): read on until the server is ready (Z) or says no.
    let mut answer = None;
    for _ in 0..256 {
        let kind = stream.read_u8().await.map_err(io)?;
        let len = stream.read_i32().await.map_err(io)?;
        let len =
            usize::try_from(len).ok().filter(|l| (4..=65_536).contains(l)).ok_or_else(|| format!("{target} does not speak PostgreSQL"))?;
        let mut payload = vec![0u8; len - 4];
        stream.read_exact(&mut payload).await.map_err(io)?;
        answer = match kind {
            b'R' => match payload.get(..4).map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]])) {
                Some(0) => continue,
                Some(_) => Some(PgHello::WantsPassword),
                None => return Err(format!("{target} does not speak PostgreSQL")),
            },
            b'Z' => Some(PgHello::Accepted),
            b'E' => {
                let mut message = String::new();
                let mut code = String::new();
                for field in payload.split(|b| *b == 0).filter(|f| !f.is_empty()) {
                    let text = String::from_utf8_lossy(&field[1..]).into_owned();
                    match field[0] {
                        b'M' => message = text,
                        b'C' => code = text,
                        _ => {}
                    }
                }
                Some(PgHello::Refused { message, code })
            }
            // Parameter status, backend key, notices: on to the answer.
            b'S' | b'K' | b'N' => continue,
            _ => return Err(format!("{target} does not speak PostgreSQL")),
        };
        break;
    }
    let answer = answer.ok_or_else(|| format!("{target} never said whether it accepts the connection"))?;
    // Terminate, politely; the answer is in either way.
    let _ = stream.write_all(&[b'X', 0, 0, 0, 4]).await;
    Ok(answer)
}

/// The store check: `None` on sled (nothing to reach), else whether the
/// configured PostgreSQL answers and accepts the user and database.
pub async fn store(settings: &Settings) -> Option<Check> {
    let config = &settings.raw.store;
    if !config.is_postgres() {
        return None;
    }
    let url = config.postgres_url.clone().unwrap_or_default();
    let what = "store.postgres_url".to_string();
    let target = match pg_target(url.trim()) {
        Ok(t) => t,
        Err(e) => return Some(Check { ok: false, what, detail: format!("cannot tell where it points ({e})") }),
    };
    let who = format!("user {} on database {} at {target}", target.user, target.database);
    Some(match pg_hello(&target).await {
        Ok(PgHello::Accepted) => {
            Check { ok: true, what, detail: format!("PostgreSQL answers and accepts {who} (schema {})", config.postgres_schema) }
        }
        Ok(PgHello::WantsPassword) => Check {
            ok: true,
            what,
            detail: format!("PostgreSQL answers for {who} and asks for a password (not checked here; `serve` logs in with it)"),
        },
        Ok(PgHello::Refused { message, code }) => Check {
            ok: false,
            what,
            detail: format!(
                "PostgreSQL refused {who}: {message} (SQLSTATE {code}); create the role or database, or allow this host in pg_hba.conf"
            ),
        },
        Err(e) => Check { ok: false, what, detail: format!("{e}; is PostgreSQL running there, and the URL right?") },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_urls_point_where_libpq_would() {
        let t = pg_target("postgres://plangate:pw@db.internal:6543/plans?sslmode=require").unwrap();
        assert_eq!(t, PgTarget { host: "db.internal".into(), port: 6543, user: "plangate".into(), database: "plans".into() });
        let t = pg_target("postgresql://u@db").unwrap();
        assert_eq!((t.port, t.database.as_str()), (5432, "u"));
        let t = pg_target("postgresql:///plans?host=/run/postgresql&user=p").unwrap();
        assert_eq!((t.host.as_str(), t.user.as_str(), t.to_string().as_str()), ("/run/postgresql", "p", "/run/postgresql/.s.PGSQL.5432"));
        let t = pg_target("host=10.0.0.5 port=5433 user=p dbname=x password=secret").unwrap();
        assert_eq!(t, PgTarget { host: "10.0.0.5".into(), port: 5433, user: "p".into(), database: "x".into() });
        assert!(pg_target("dbname=x").is_err());
        assert!(pg_target("postgres://db:notaport/x").is_err());
    }

    /// A port nobody listens on: named, with what to look at.
    #[tokio::test]
    async fn an_unreachable_postgres_is_named() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let target = PgTarget { host: "127.0.0.1".into(), port: free, user: "u".into(), database: "d".into() };
        let err = pg_hello(&target).await.unwrap_err();
        assert!(err.contains(&format!("cannot connect to 127.0.0.1:{free}")), "{err}");
    }

    /// The PostgreSQL the tests run against (trust auth) lets the probe in.
    #[tokio::test]
    async fn the_test_postgres_accepts_the_probe() {
        let target = pg_target("postgres://postgres@127.0.0.1:5432/test").unwrap();
        let hello = pg_hello(&target)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL is not reachable at 127.0.0.1:5432 (the store tests need it; .ci/run starts it): {e}"));
        assert_eq!(hello, PgHello::Accepted);
        let missing = PgTarget { database: "plangate_no_such_database".into(), ..target };
        assert!(matches!(pg_hello(&missing).await, Ok(PgHello::Refused { code, .. }) if code == "3D000"));
    }

    /// A server that answers like PostgreSQL does to a bad database.
    #[tokio::test]
    async fn a_refusal_carries_the_server_message() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let len = s.read_i32().await.unwrap();
            let mut startup = vec![0u8; len as usize - 4];
            s.read_exact(&mut startup).await.unwrap();
            let fields = b"SFATAL\0C3D000\0Mdatabase \"nope\" does not exist\0\0";
            let mut answer = vec![b'E'];
            answer.extend_from_slice(&((fields.len() + 4) as i32).to_be_bytes());
            answer.extend_from_slice(fields);
            s.write_all(&answer).await.unwrap();
            String::from_utf8_lossy(&startup).into_owned()
        });
        let target = PgTarget { host: "127.0.0.1".into(), port, user: "plangate".into(), database: "nope".into() };
        let hello = pg_hello(&target).await.unwrap();
        assert_eq!(hello, PgHello::Refused { message: "database \"nope\" does not exist".into(), code: "3D000".into() });
        let startup = server.await.unwrap();
        assert!(startup.contains("user\0plangate\0database\0nope\0"), "{startup:?}");
    }
}
