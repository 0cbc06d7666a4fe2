use super::*;

fn parse(toml: &str) -> Result<Settings, ConfigError> {
    Settings::from_toml(toml)
}

#[test]
fn default_config_is_valid() {
    let s = parse(DEFAULT_TOML).unwrap();
    assert!(s.bind.ip().is_loopback());
    assert_eq!(s.timer_policy("demo").nudges_ms, vec![600_000, 1_800_000, 3_600_000]);
}

/// `toml` with every secret value shipped in `config/` replaced by a real-looking one.
fn with_real_secrets(toml: &str) -> String {
    let mut out = toml.to_string();
    for (i, (value, _)) in shipped_secrets().unwrap().iter().enumerate() {
        // The Discord public key must be one: RFC 8032's first test vector.
        let real = if value.contains("hex") {
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a".to_string()
        } else {
            format!("real-secret-{i}-5f2c9a7e01b3d4")
        };
        out = out.replace(&format!("\"{value}\""), &format!("\"{real}\""));
    }
    out
}

#[test]
fn shipped_secrets_are_read_from_both_files() {
    let shipped = shipped_secrets().unwrap();
    for (value, kind) in [
        ("dev-agent-token", Shipped::Default),
        ("dev-operator-token", Shipped::Default),
        ("change-me-claude-token", Shipped::Example),
        ("a-long-random-secret-16-256-chars", Shipped::Example),
        ("123456:bot-token-from-botfather", Shipped::Example),
        ("xoxb-…", Shipped::Example),
        ("…hex…", Shipped::Example),
    ] {
        assert!(shipped.contains(&(value.to_string(), kind)), "{value} missing from {shipped:?}");
    }
}

#[test]
fn the_example_as_shipped_is_refused_naming_the_key() {
    let err = parse(EXAMPLE_TOML).unwrap_err().to_string();
    assert!(err.contains("invalid setting `agents.claude.token`: is a placeholder"), "{err}");
    assert!(err.contains("PLANGATE__AGENTS__CLAUDE__TOKEN"), "{err}");
    for other in ["server.operator_token", "telegram.token", "telegram.webhook_secret", "slack.signing_secret", "discord.bot_token"] {
        assert!(err.contains(&format!("`{other}`")), "{other}: {err}");
    }
    let public = EXAMPLE_TOML.replace("127.0.0.1:8787", "0.0.0.0:8787");
    assert!(parse(&public).is_err());
    // Only the webhook secret left as shipped: still refused, by name.
    let real = with_real_secrets(EXAMPLE_TOML);
    let webhook = real.replace(
        &real.lines().find(|l| l.starts_with("webhook_secret")).unwrap().to_string(),
        "webhook_secret = \"a-long-random-secret-16-256-chars\"",
    );
    let err = parse(&webhook).unwrap_err().to_string();
    assert!(err.contains("telegram.webhook_secret") && err.contains("config/example.toml"), "{err}");
    let err = parse(&real.replace("real-secret-", "CHANGE_ME-")).unwrap_err().to_string();
    assert!(err.contains("placeholder"), "{err}");
}

#[test]
fn dev_tokens_refused_with_a_webhook_or_http_transport_even_on_loopback() {
    let polling = format!("{DEFAULT_TOML}\n[telegram]\ntoken = \"1:real-bot-token\"\n");
    parse(&polling).unwrap();
    for section in [
        "[telegram]\ntoken = \"1:real-bot-token\"\ntransport = \"webhook\"\n",
        "[slack]\nbot_token = \"xoxb-real\"\ntransport = \"http\"\n",
        "[discord]\nbot_token = \"real\"\napplication_id = \"1\"\ntransport = \"http\"\n",
    ] {
        let err = parse(&format!("{DEFAULT_TOML}\n{section}")).unwrap_err().to_string();
        assert!(err.contains("public development value") && err.contains("transport"), "{err}");
    }
}

#[test]
fn data_dir_is_made_absolute() {
    let s = parse(DEFAULT_TOML).unwrap();
    assert!(s.data_dir.is_absolute());
    assert_eq!(s.data_dir, std::env::current_dir().unwrap().join("./data"));
    assert_eq!(s.raw.server.data_dir, s.data_dir);
}

#[test]
fn example_config_with_real_secrets_is_valid() {
    let example = with_real_secrets(EXAMPLE_TOML);
    let s = parse(&example).unwrap();
    // Every channel section must also satisfy its adapter's own config type.
    let raw = &s.raw;
    serde_json::from_value::<plangate_telegram::TelegramConfig>(raw.telegram.clone().unwrap()).unwrap();
    serde_json::from_value::<plangate_slack::SlackConfig>(raw.slack.clone().unwrap()).unwrap();
    serde_json::from_value::<plangate_discord::DiscordConfig>(raw.discord.clone().unwrap()).unwrap();
    assert!(!raw.agents["claude"].gate.allow_commands.is_empty());
}

#[test]
fn dev_tokens_refused_beyond_loopback() {
    let toml = DEFAULT_TOML.replace("127.0.0.1:8787", "0.0.0.0:8787");
    let err = parse(&toml).unwrap_err().to_string();
    assert!(err.contains("public development value"), "{err}");
}

/// `[approvals]`, an agent's and its destinations' rules combine to the
/// strictest, and impossible quorums are refused naming the key.
#[test]
fn approval_rules_combine_to_the_strictest_and_must_be_reachable() {
    let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[telegram]\ntoken = \"t\"\n[slack]\nbot_token = \"b\"\napp_token = \"xapp-1\"\n\
                [destinations.a]\nchannel = \"telegram\"\nchat = \"1\"\napprovers = [\"telegram:1\", \"telegram:2\"]\n\
                [destinations.b]\nchannel = \"slack\"\nchat = \"C1\"\napprovers = [\"slack:U1\"]\n";
    let agent = |extra: &str| format!("[agents.x]\ntoken = \"0123456789abcdef\"\ndestinations = [\"a\", \"b\"]\n{extra}");
    let s = parse(&format!("{base}{}", agent(""))).unwrap();
    assert_eq!((s.approval_policy("x").required, s.approval_policy("x").forbid_self), (1, false));
    assert_eq!(s.approval_policy("unknown").approvers, Approvers::listed(Vec::<String>::new()));
    // amendments: "ask" by default and wherever any key asks; "flag" where every key that speaks flags.
    let flag = |toml: String| parse(&toml).unwrap().approval_policy("x").amendments == AmendmentPolicy::Flag;
    assert!(!flag(format!("{base}{}", agent(""))));
    assert!(flag(format!("{base}{}", agent("[agents.x.approvals]\namendments = \"flag\"\n"))));
    assert!(!flag(format!("{base}[destinations.b.approvals]\namendments = \"ask\"\n[approvals]\namendments = \"flag\"\n{}", agent(""))));
    // The destination's stricter rule wins over the global one.
    let toml = format!("{base}[destinations.b.approvals]\nrequired = 3\nforbid_self = true\n[approvals]\nrequired = 2\n{}", agent(""));
    let p = parse(&toml).unwrap().approval_policy("x");
    assert_eq!((p.required, p.forbid_self), (3, true));
    // Four approvers wanted, three exist.
    let toml = format!("{base}{}[agents.x.approvals]\nrequired = 4\n", agent(""));
    let err = parse(&toml).unwrap_err().to_string();
    assert!(err.contains("agents.x.approvals.required") && err.contains("needs 4 distinct approvers"), "{err}");
    // The fixed requester does not count under forbid_self.
    let toml = format!("{base}{}[agents.x.approvals]\nrequired = 3\nforbid_self = true\n", agent("requested_by = \"slack:U1\"\n"));
    let err = parse(&toml).unwrap_err().to_string();
    assert!(err.contains("not counting its requester"), "{err}");
    let toml = format!("{base}[approvals]\nrequired = 0\n{}", agent(""));
    assert!(parse(&toml).unwrap_err().to_string().contains("approvals.required"));
    let err = parse(&format!("{base}{}", agent("requested_by = \"alice\"\n"))).unwrap_err().to_string();
    assert!(err.contains("agents.x.requested_by"), "{err}");
    let s = parse(&format!("{base}{}", agent("requested_by = \"slack:U9\"\n"))).unwrap();
    assert_eq!(s.requested_by("x"), Some("slack:U9"));
}

#[test]
fn errors_name_the_key() {
    let cases = [
        ("[server]\nbind = \"nope\"\ndata_dir = \"d\"\n", "server.bind"),
        ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"short\"\n", "agents.a.token"),
        ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"0123456789abcdef-a\"\ndestinations = [\"x\"]\n", "agents.a.destinations"),
        ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[approvals]\nnudges = [\"2h\"]\ntimeout = \"1h\"\n", "approvals.nudges[0]"),
        ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[approvals]\ntimeout = \"soon\"\n", "approvals.timeout"),
        ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[destinations.x]\nchannel = \"irc\"\nchat = \"1\"\n", "destinations.x.channel"),
        ("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[telegram]\ntoken = \"t\"\n[destinations.x]\nchannel = \"telegram\"\nchat = \"1\"\napprovers = [\"slack:U1\"]\n", "destinations.x.approvers[0]"),
    ];
    for (toml, key) in cases {
        let err = parse(toml).unwrap_err().to_string();
        assert!(err.contains(key), "{key}: {err}");
    }
    let err = parse("[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\ntypo = 1\n").unwrap_err().to_string();
    assert!(err.contains("typo"), "{err}");
}

/// `[agents.X.approvals]` overrides only the keys it sets: the others
/// (here `escalate_to` and `timeout`) come from `[approvals]`.
#[test]
fn agent_approvals_inherit_the_keys_they_do_not_set() {
    let toml = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n\
        [telegram]\ntoken = \"1:real-bot-token\"\n\
        [destinations.leads]\nchannel = \"telegram\"\nchat = \"-1\"\n\
        [approvals]\nnudges = [\"10m\"]\ntimeout = \"2h\"\nescalate_to = [\"leads\"]\n\
        [agents.a]\ntoken = \"0123456789abcdef-a\"\n[agents.a.approvals]\nnudges = [\"5m\", \"20m\"]\n\
        [agents.b]\ntoken = \"0123456789abcdef-b\"\n[agents.b.approvals]\nescalate_to = []\n";
    let s = parse(toml).unwrap();
    let a = s.timer_policy("a");
    assert_eq!(a.nudges_ms, vec![300_000, 1_200_000]);
    assert_eq!(a.timeout_ms, Some(7_200_000), "timeout inherited");
    assert_eq!(a.ladder, vec![plangate_engine::Rung::once(1_200_000)], "escalation inherited, after a's own last nudge");
    assert_eq!(s.escalations["a"], vec!["leads".to_string()]);
    // Setting a key to empty is an override too.
    let b = s.timer_policy("b");
    assert_eq!(b.nudges_ms, vec![600_000]);
    assert!(b.ladder.is_empty());
    assert!(s.escalations["b"].is_empty());
    // An inherited key is validated against the agent's own keys: a
    // timeout inherited from [approvals] before the agent's nudge fails,
    // naming the agent's key.
    let late = toml.replace("nudges = [\"5m\", \"20m\"]", "nudges = [\"3h\"]");
    let err = parse(&late).unwrap_err().to_string();
    assert!(err.contains("agents.a.approvals.nudges[0]"), "{err}");
}

/// The README's quick-start config, taken from README.md itself, is
/// `config/quickstart.toml` and loads once the environment variables its
/// stand-in secrets name are set (so the doc cannot drift); left in
/// place, a stand-in is refused naming its variable, anywhere.
#[test]
fn the_readme_quick_start_config_loads_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let after = readme.split("<!-- quickstart:plangate.toml -->").nth(1).expect("the README marks its quick-start config");
    let block = after.split("```toml\n").nth(1).and_then(|b| b.split("```").next()).expect("a toml block after the marker");
    assert_eq!(block, QUICKSTART_TOML, "README.md and config/quickstart.toml differ");
    let err = parse(block).unwrap_err().to_string();
    assert!(err.contains("is a placeholder") && err.contains("export PLANGATE__"), "{err}");
    let block = &block
        .replace("from-env-PLANGATE__SERVER__OPERATOR_TOKEN", "5b1e9c2a7f3d4e6081a9c3e5f7b2d4a6")
        .replace("from-env-PLANGATE__TELEGRAM__TOKEN", "123456:a-real-bot-token")
        .replace("from-env-PLANGATE__AGENTS__CLAUDE__TOKEN", "9f2c4e7a1b3d5f60a8c2e4b6d8f0a1c3");
    let s = parse(block).unwrap();
    assert_eq!(s.raw.agents["claude"].destinations, vec!["phone".to_string()]);
    serde_json::from_value::<plangate_telegram::TelegramConfig>(s.raw.telegram.clone().unwrap()).unwrap().validate().unwrap();
    assert_eq!(s.timer_policy("claude").nudges_ms, vec![600_000, 1_800_000, 3_600_000], "the default nudges");
}

/// Tokens of plangate's own: short ones and repeated patterns are refused.
#[test]
fn weak_tokens_of_our_own_are_refused() {
    for weak in ["short", "000000000000000000000000", "abcabcabcabcabcabcabc", "passwordpassword", "aabbccaabbccaabbccab"] {
        assert!(weakness(weak).is_some(), "{weak}");
    }
    for strong in ["9f2c4e7a1b3d5f60a8c2e4b6d8f0a1c3", "test-agent-token-0123456789", "operator-token-123"] {
        assert_eq!(weakness(strong), None, "{strong}");
    }
}

#[test]
fn webhooks_take_only_http_urls_and_long_unique_secrets() {
    let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.ci]\ntoken = \"ci-token-0123456789\"\n[agents.ci.webhook]\n";
    let hook = |url: &str, secret: &str| parse(&format!("{base}url = \"{url}\"\nsecret = \"{secret}\"\n"));
    let s = hook("https://runner.example.com/plangate?x=1", "0123456789abcdef").unwrap();
    assert_eq!(s.webhook("ci").unwrap().url, "https://runner.example.com/plangate?x=1");
    hook("http://127.0.0.1:9/hook", "0123456789abcdef").unwrap();
    for (url, secret, key, says) in [
        ("ftp://files.example.com/x", "0123456789abcdef", "agents.ci.webhook.url", "only http:// and https://"),
        ("file:///etc/passwd", "0123456789abcdef", "agents.ci.webhook.url", "\"file\" scheme"),
        ("runner.example.com/hook", "0123456789abcdef", "agents.ci.webhook.url", "is not a URL"),
        ("https://user:pw@runner.example.com/", "0123456789abcdef", "agents.ci.webhook.url", "password"),
        ("https://runner.example.com/", "too-short", "agents.ci.webhook.secret", "at least 16"),
        ("https://runner.example.com/", "ci-token-0123456789", "agents.ci.webhook.secret", "agents.ci.token"),
    ] {
        let err = hook(url, secret).unwrap_err().to_string();
        assert!(err.contains(key) && err.contains(says), "{url} {secret}: {err}");
    }
    let err = hook("https://runner.example.com/", "change-me-webhook-secret").unwrap_err().to_string();
    assert!(err.contains("agents.ci.webhook.secret") && err.contains("placeholder"), "{err}");
    // Masked and never in Debug.
    let s = hook("https://runner.example.com/", "0123456789abcdef").unwrap();
    assert!(!s.masked().to_string().contains("0123456789abcdef"));
    assert!(!format!("{s:?}").contains("0123456789abcdef"));
}

#[test]
fn subagent_expiry_and_shared_namespaces() {
    let s = parse(DEFAULT_TOML).unwrap();
    assert_eq!(s.timer_policy("demo").subagent_expiry_ms, Some(30 * 60_000));
    let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"0123456789abcdef-a\"\n[agents.b]\ntoken = \"0123456789abcdef-b\"\n";
    let s = parse(&format!("{base}[approvals]\nsubagent_expiry = \"off\"\n[agents.b.approvals]\nsubagent_expiry = \"5m\"\n")).unwrap();
    assert_eq!((s.timer_policy("a").subagent_expiry_ms, s.timer_policy("b").subagent_expiry_ms), (None, Some(300_000)));
    for (extra, key) in [
        ("[approvals]\nsubagent_expiry = \"soon\"\n", "approvals.subagent_expiry"),
        ("[approvals]\nsubagent_expiry = \"0s\"\n", "approvals.subagent_expiry"),
        ("[namespaces.\"a/b\"]\nagents = [\"a\"]\n", "namespaces.a/b"),
        ("[namespaces.release]\nagents = []\n", "namespaces.release.agents"),
        ("[namespaces.release]\nagents = [\"a\", \"ghost\"]\n", "namespaces.release.agents"),
    ] {
        let err = parse(&format!("{base}{extra}")).unwrap_err().to_string();
        assert!(err.contains(key), "{key}: {err}");
    }
    let s = parse(&format!("{base}[namespaces.release]\nagents = [\"a\", \"b\"]\n")).unwrap();
    assert_eq!(s.namespace_key("a", "release"), s.namespace_key("b", "release"));
    assert!(s.namespace_key("a", "release").shared);
    assert_eq!(s.namespace_key("a", "notes"), NamespaceKey { store: "a:notes".into(), shared: false });
    assert_ne!(s.namespace_key("a", "notes"), s.namespace_key("b", "notes"));
}

#[test]
fn claim_timeout_defaults_to_30_minutes_and_an_agent_may_set_its_own() {
    let s = parse(DEFAULT_TOML).unwrap();
    assert_eq!(s.timer_policy("demo").claim_timeout_ms, 30 * 60_000);
    let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[agents.a]\ntoken = \"0123456789abcdef-a\"\n[agents.b]\ntoken = \"0123456789abcdef-b\"\n";
    let s = parse(&format!("{base}[approvals]\nclaim_timeout = \"10m\"\n[agents.b.approvals]\nclaim_timeout = \"2h\"\n")).unwrap();
    assert_eq!((s.timer_policy("a").claim_timeout_ms, s.timer_policy("b").claim_timeout_ms), (600_000, 7_200_000));
    for bad in ["soon", "0s", "off"] {
        let err = parse(&format!("{base}[approvals]\nclaim_timeout = \"{bad}\"\n")).unwrap_err().to_string();
        assert!(err.contains("approvals.claim_timeout"), "{bad}: {err}");
    }
}

#[test]
fn store_defaults_to_sled_and_postgres_needs_a_url_and_a_plain_schema() {
    let s = parse(DEFAULT_TOML).unwrap();
    assert!(!s.raw.store.is_postgres());
    assert_eq!((s.raw.store.pool_size, s.raw.store.lease_seconds, s.raw.store.postgres_schema.as_str()), (16, 10, "plangate"));
    let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n";
    let pg = |extra: &str| parse(&format!("{base}[store]\nbackend = \"postgres\"\n{extra}"));
    let s = pg("postgres_url = \"postgres://plangate@db.internal:5432/plangate\"\n").unwrap();
    assert!(s.raw.store.is_postgres());
    assert_eq!(s.raw.store.lease(), Duration::from_secs(10));
    pg("postgres_url = \"host=/run/postgresql dbname=plangate\"\npostgres_schema = \"team_a\"\n").unwrap();
    pg("postgres_url = \"postgresql:///plangate?host=/run/postgresql\"\n").unwrap();
    for (extra, key, says) in [
        ("", "store.postgres_url", "is required with backend = \"postgres\""),
        ("postgres_url = \"  \"\n", "store.postgres_url", "is required"),
        ("postgres_url = \"mysql://db/x\"\n", "store.postgres_url", "postgres:// or postgresql://"),
        ("postgres_url = \"dbname=x\"\n", "store.postgres_url", "needs host="),
        ("postgres_url = \"postgres://db/x\"\npostgres_schema = \"Plans\"\n", "store.postgres_schema", "lowercase"),
        ("postgres_url = \"postgres://db/x\"\npostgres_schema = \"a; drop\"\n", "store.postgres_schema", "not a schema name"),
        ("postgres_url = \"postgres://db/x\"\npostgres_schema = \"pg_catalog\"\n", "store.postgres_schema", "pg_"),
        ("postgres_url = \"postgres://db/x\"\npostgres_schema = \"\"\n", "store.postgres_schema", "1–63"),
        ("postgres_url = \"postgres://db/x\"\npool_size = 0\n", "store.pool_size", "1–1000"),
        ("postgres_url = \"postgres://db/x\"\nlease_seconds = 1\n", "store.lease_seconds", "3–600"),
    ] {
        let err = pg(extra).unwrap_err().to_string();
        assert!(err.contains(&format!("`{key}`")) && err.contains(says), "{extra}: {err}");
    }
    let err = parse(&format!("{base}[store]\nbackend = \"mysql\"\n")).unwrap_err().to_string();
    assert!(err.contains("`store.backend`") && err.contains("\"sled\"") && err.contains("\"postgres\""), "{err}");
    // Every problem of the section at once.
    let err = pg("postgres_schema = \"X\"\n").unwrap_err().to_string();
    assert!(err.contains("2 settings are invalid"), "{err}");
    // Sled ignores the PostgreSQL keys (a config can be switched back by one line).
    parse(&format!("{base}[store]\nbackend = \"sled\"\npostgres_schema = \"X\"\n")).unwrap();
    let err = parse(&format!("{base}[store]\nbackend = \"sled\"\nurl = \"x\"\n")).unwrap_err().to_string();
    assert!(err.contains("url"), "{err}");
}

#[test]
fn the_postgres_password_is_masked_everywhere() {
    for (url, masked) in [
        ("postgres://plangate:s3cret@db:5432/plangate", "postgres://plangate:********@db:5432/plangate"),
        (
            "postgres://plangate@db/plangate?password=s3cret&sslmode=require",
            "postgres://plangate@db/plangate?password=********&sslmode=require",
        ),
        ("postgresql://u:s3cret@db", "postgresql://u:********@db"),
        ("host=db user=u password=s3cret dbname=p", "host=db user=u password=******** dbname=p"),
        ("postgres://db/plangate", "postgres://db/plangate"),
    ] {
        assert_eq!(mask_url_password(url), masked);
    }
    let toml = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n[store]\nbackend = \"postgres\"\npostgres_url = \"postgres://u:s3cret@db/p\"\n";
    let s = parse(toml).unwrap();
    assert_eq!(s.masked()["store"]["postgres_url"], "postgres://u:********@db/p");
    assert!(!s.masked().to_string().contains("s3cret"));
    assert!(!format!("{s:?}").contains("s3cret"));
    assert_eq!(s.raw.store.postgres_url.as_deref(), Some("postgres://u:s3cret@db/p"), "the real URL is kept for the store");
}

#[test]
fn masked_hides_secrets() {
    let s = parse(DEFAULT_TOML).unwrap();
    let text = s.masked().to_string();
    assert!(!text.contains("dev-agent-token") && !text.contains("dev-operator-token"), "{text}");
}

#[test]
fn a_bad_project_glob_is_refused_with_its_key_and_threads_work_on_every_channel() {
    let toml = |channel_section: &str, dest: &str| {
        format!(
            "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n{channel_section}\n[agents.a]\ntoken = \"0123456789abcdef\"\ndestinations = [\"x\"]\n[destinations.x]\n{dest}\n"
        )
    };
    let telegram = "[telegram]\ntoken = \"t\"";
    let Err(err) = parse(&toml(telegram, "channel = \"telegram\"\nchat = \"1\"\nprojects = [\"a[\"]")) else { panic!("refused") };
    let err = err.to_string();
    assert!(err.contains("destinations.x.projects") && err.contains("is not a glob"), "{err}");
    let ok = parse(&toml(telegram, "channel = \"telegram\"\nchat = \"1\"\nprojects = [\"billing-*\"]\nthreads = \"per_session\""));
    assert!(ok.is_ok(), "{:?}", ok.err());
    let discord = "[discord]\nbot_token = \"b\"\napplication_id = \"1\"\nguild_id = \"2\"";
    let ok = parse(&toml(discord, "channel = \"discord\"\nchat = \"3\"\nthreads = \"per_session\""));
    assert!(ok.is_ok(), "every channel has threads now: {:?}", ok.err());
}

#[test]
fn policy_rules_are_read_from_the_section_and_a_bad_one_is_named() {
    let base = "[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = \"d\"\n";
    let s = parse(&format!("{base}[[policy.rules]]\nid = \"two\"\nquorum = 2\nclass = \"infra.change\"\nagent = [\"ci\", \"docs-*\"]\n"))
        .unwrap();
    assert_eq!(s.policy.rules()[0].action, plangate_policy::Action::Quorum(2));
    let err = parse(&format!("{base}[[policy.rules]]\nid = \"x\"\naction = \"sometimes\"\n")).unwrap_err().to_string();
    assert!(err.contains("policy") && err.contains("not one of auto, one, quorum, deny"), "{err}");
    assert!(parse(DEFAULT_TOML).unwrap().policy.is_empty());
}

#[test]
fn policy_d_beside_the_config_file_is_merged_in() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plangate.toml");
    let data = dir.path().join("data");
    std::fs::write(&file, format!("[server]\nbind = \"127.0.0.1:8787\"\ndata_dir = {:?}\n", data.display().to_string())).unwrap();
    std::fs::create_dir(dir.path().join("policy.d")).unwrap();
    std::fs::write(dir.path().join("policy.d/10-db.toml"), "[[rules]]\nid = \"db\"\naction = \"deny\"\nclass = \"db.drop\"\n").unwrap();
    let s = Settings::load(Some(&file)).unwrap();
    assert_eq!(s.policy.rules()[0].source, plangate_policy::Source::File(dir.path().join("policy.d/10-db.toml")));
}

#[test]
fn email_is_off_by_default_and_checked_whole_when_set() {
    assert!(parse(DEFAULT_TOML).unwrap().raw.email.is_none());
    let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n";
    let good = format!(
        "{base}[email]\nsmtp_host = \"127.0.0.1\"\ntls = \"none\"\nfrom = \"plangate <p@example.com>\"\npublic_url = \"https://plans.example/\"\n\
         [email.approvers]\n\"telegram:1\" = \"a@example.com\"\n"
    );
    let s = parse(&good).unwrap();
    assert_eq!(s.email_public_url(), Some("https://plans.example"));
    assert_eq!(s.raw.email.as_ref().map(|e| e.port()), Some(25));
    let bad = format!(
        "{base}[email]\nsmtp_host = \"smtp.example.com\"\ntls = \"none\"\nfrom = \"nobody\"\nsmtp_user = \"u\"\n\
         [email.approvers]\n\"alice\" = \"not an address\"\n"
    );
    let e = parse(&bad).unwrap_err().to_string();
    for key in ["email.tls", "email.from", "email.smtp_user", "email.public_url", "email.approvers"] {
        assert!(e.contains(key), "{key} in {e}");
    }
    let with_password = format!("{base}[email]\nsmtp_host = \"h\"\nsmtp_user = \"u\"\nsmtp_password = \"hunter2\"\nfrom = \"a@b.example\"\npublic_url = \"https://p.example\"\n");
    let s = parse(&with_password).unwrap();
    assert_eq!(s.masked()["email"]["smtp_password"], "********");
    assert!(!format!("{:?}", s.raw).contains("hunter2"));
}

const LADDER_BASE: &str = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n\
    [telegram]\ntoken = \"1:real-bot-token\"\n\
    [destinations.team]\nchannel = \"telegram\"\nchat = \"-1\"\napprovers = [\"telegram:1\"]\n\
    [destinations.leads]\nchannel = \"telegram\"\nchat = \"-2\"\n\
    [agents.a]\ntoken = \"0123456789abcdef-a\"\ndestinations = [\"team\"]\n\
    [schedules.primary]\nkind = \"rota\"\npeople = [\"telegram:7\", \"ops@example.com\"]\ntime_zone = \"Europe/Berlin\"\nstart = \"2026-12-07T09:00\"\n\
    [people.\"telegram:7\"]\nemail = \"seven@example.com\"\ntime_zone = \"America/New_York\"\nquiet_hours = \"22:00-07:00\"\n";

/// A three-level ladder loads: its levels in order, each level's targets,
/// the destinations of every level in the approver index's escalations.
#[test]
fn a_ladder_loads_with_its_levels_in_order() {
    let toml = format!(
        "{LADDER_BASE}[approvals]\nnudges = [\"5m\"]\ntimeout = \"2h\"\n\
         [[approvals.ladder]]\nafter = \"10m\"\ndestinations = [\"leads\"]\nrepeat = \"5m\"\n\
         [[approvals.ladder]]\nafter = \"30m\"\nschedules = [\"primary\"]\n\
         [[approvals.ladder]]\nafter = \"1h\"\nemails = [\"cto@example.com\"]\napprovers = [\"telegram:9\"]\n"
    );
    let s = parse(&toml).unwrap();
    let p = s.timer_policy("a");
    assert_eq!(
        p.ladder,
        vec![
            plangate_engine::Rung { after_ms: 600_000, repeat_ms: Some(300_000) },
            plangate_engine::Rung::once(1_800_000),
            plangate_engine::Rung::once(3_600_000)
        ]
    );
    assert_eq!(s.ladders["a"][1].schedules, vec!["primary".to_string()]);
    assert_eq!(s.escalations["a"], vec!["leads".to_string()]);
    assert!(s.people["telegram:7"].quiet.is_some());
}

/// Each mistake names its key and what to write instead.
#[test]
fn ladder_mistakes_name_the_key_and_the_fix() {
    let cases: &[(&str, &str, &str)] = &[
        ("[[approvals.ladder]]\nafter = \"30m\"\ndestinations = [\"leads\"]\n[[approvals.ladder]]\nafter = \"10m\"\ndestinations = [\"leads\"]\n", "approvals.ladder[1].after", "order the levels"),
        ("[[approvals.ladder]]\nafter = \"10m\"\n", "approvals.ladder[0]", "reaches nobody"),
        ("[[approvals.ladder]]\nafter = \"3h\"\ndestinations = [\"leads\"]\n", "approvals.ladder[0].after", "timeout"),
        ("[[approvals.ladder]]\nafter = \"soon\"\ndestinations = [\"leads\"]\n", "approvals.ladder[0].after", "duration like"),
        ("[[approvals.ladder]]\nafter = \"10m\"\nrepeat = \"0s\"\ndestinations = [\"leads\"]\n", "approvals.ladder[0].repeat", "leave it out"),
        ("[[approvals.ladder]]\nafter = \"10m\"\ndestinations = [\"nowhere\"]\n", "approvals.ladder[0].destinations", "[destinations.nowhere]"),
        ("[[approvals.ladder]]\nafter = \"10m\"\nschedules = [\"nope\"]\n", "approvals.ladder[0].schedules", "[schedules.nope]"),
        ("[[approvals.ladder]]\nafter = \"10m\"\nemails = [\"not mail\"]\n", "approvals.ladder[0].emails", "not an email address"),
        ("[[approvals.ladder]]\nafter = \"10m\"\napprovers = [\"alice\"]\n", "approvals.ladder[0].approvers", "telegram:111"),
        ("escalate_to = [\"leads\"]\n[[approvals.ladder]]\nafter = \"10m\"\ndestinations = [\"leads\"]\n", "approvals.ladder", "keep one"),
    ];
    for (ladder, key, fix) in cases {
        refused(&format!("{LADDER_BASE}[approvals]\nnudges = [\"5m\"]\ntimeout = \"2h\"\n{ladder}"), key, fix);
    }
    let schedules: &[(&str, &str, &str)] = &[
        ("kind = \"cron\"", "schedules.s.kind", "\"rota\", \"ical\""),
        (
            "kind = \"rota\"\npeople = [\"telegram:1\"]\nstart = \"2026-12-07T09:00\"\ntime_zone = \"Berlin\"",
            "schedules.s.time_zone",
            "Europe/Berlin",
        ),
        ("kind = \"rota\"\npeople = [\"telegram:1\"]", "schedules.s.start", "2026-12-07T09:00"),
        ("kind = \"ical\"\nurl = \"http://calendar.example.com/x.ics\"", "schedules.s.url", "https://"),
        ("kind = \"ical\"\nurl = \"https://c.example.com/x.ics\"\ntimeout = \"0s\"", "schedules.s.timeout", "longer than 0"),
        ("kind = \"pagerduty\"\nschedule_id = \"P1\"", "schedules.s.token", "PLANGATE__SCHEDULES__S__TOKEN"),
        ("kind = \"opsgenie\"\ntoken = \"t\"", "schedules.s.schedule_id", "schedule's id"),
    ];
    for (body, key, fix) in schedules {
        refused(&format!("{LADDER_BASE}[schedules.s]\n{body}\n"), key, fix);
    }
    let people: &[(&str, &str, &str)] = &[
        ("quiet_hours = \"night\"", "quiet_hours", "22:00-07:00"),
        ("away_from = \"2026-12-20\"", "away_from", "away_until"),
        ("time_zone = \"Nowhere\"\nquiet_hours = \"22:00-07:00\"", "quiet_hours", "IANA"),
    ];
    for (body, key, fix) in people {
        refused(&format!("{LADDER_BASE}[people.\"telegram:5\"]\n{body}\n"), &format!("people.\"telegram:5\".{key}"), fix);
    }
    // A schedule with nobody to fall back to: the agent has no approvers.
    let lonely = LADDER_BASE.replace("approvers = [\"telegram:1\"]\n", "");
    let toml = format!("{lonely}[approvals]\nnudges = [\"5m\"]\n[[approvals.ladder]]\nafter = \"10m\"\nschedules = [\"primary\"]\n");
    refused(&toml, "schedules.primary.fallback", "list who to reach");
}

/// `toml` is refused, naming `key` and saying `fix`.
fn refused(toml: &str, key: &str, fix: &str) {
    let err = parse(toml).unwrap_err().to_string();
    assert!(err.contains(&format!("`{key}`")) && err.contains(fix), "{key}: {err}");
}

#[test]
fn push_is_off_by_default_and_checked_when_set() {
    assert!(parse(DEFAULT_TOML).unwrap().raw.push.is_none());
    let base = "[server]\nbind = \"127.0.0.1:1\"\ndata_dir = \"d\"\n";
    let good = format!("{base}public_url = \"https://plans.example\"\n[push]\nsubject = \"mailto:ops@example.com\"\n");
    let s = parse(&good).unwrap();
    let push = s.raw.push.as_ref().expect("on");
    assert_eq!(push.endpoint_hosts, plangate_push::subscription::DEFAULT_ENDPOINT_HOSTS.map(String::from).to_vec());
    assert_eq!(push.lifetime_ms(), 30 * 24 * 60 * 60 * 1000);
    let bad = format!("{base}[push]\nsubject = \"ops\"\nendpoint_hosts = [\"https://x.example/\"]\n");
    let e = parse(&bad).unwrap_err().to_string();
    for key in ["`push`", "push.subject", "push.endpoint_hosts"] {
        assert!(e.contains(key), "{key} in {e}");
    }
}
