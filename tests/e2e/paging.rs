//! `GET /v1/approvals` in pages (`limit`, `after`, `Link: rel="next"`) and
//! `plangate list` following them, against the real binary.

use super::kit::{call, plan, propose_id};
use plangate_testkit::server::{ServerProcess, OPERATOR_TOKEN};
use reqwest::Method;
use serde_json::Value;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_plangate");

fn sorted(ids: &[String]) -> Vec<String> {
    let mut ids = ids.to_vec();
    ids.sort();
    ids
}

/// One page: status, the approval ids, and the `rel="next"` target.
async fn page(s: &ServerProcess, path: &str) -> (u16, Vec<String>, Option<String>, Value) {
    let resp = s.operator(Method::GET, path).send().await.expect("answered");
    let status = resp.status().as_u16();
    let link = resp.headers().get("link").map(|v| v.to_str().unwrap().to_string());
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    let ids = body.as_array().into_iter().flatten().filter_map(|a| a["approval_id"].as_str()).map(str::to_string).collect();
    let next = link.map(|l| {
        assert!(l.ends_with(">; rel=\"next\""), "{l}");
        l.trim_start_matches('<').split('>').next().unwrap().to_string()
    });
    (status, ids, next, body)
}

#[tokio::test]
async fn approvals_come_in_bounded_pages_and_the_cli_follows_them() {
    let s = ServerProcess::start(BIN, "").await;
    // 101 pending approvals, one per session, in creation order.
    let mut created = Vec::new();
    for n in 0..101 {
        created.push(propose_id(&s, &format!("p{n}"), &plan(&format!("Plan {n}"), &["read"])).await);
    }

    // No limit: the default page (100), then the rest.
    let (st, first, next, _) = page(&s, "/v1/approvals").await;
    assert_eq!((st, first.len()), (200, 100));
    let next = next.expect("a full page links the next one");
    assert!(next.starts_with("/v1/approvals?status=pending&limit=100&after="), "{next}");
    let (st, rest, last, _) = page(&s, &next).await;
    assert_eq!((st, rest.len(), last), (200, 1, None), "the last page links nothing");
    let all: Vec<String> = first.into_iter().chain(rest).collect();
    // Oldest first (proposals of one millisecond are ordered by id, so
    // compare as the server orders), each exactly once.
    let (_, every, _, body) = page(&s, "/v1/approvals?limit=1000").await;
    let times: Vec<&str> = body.as_array().unwrap().iter().map(|a| a["created_at"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first: {times:?}");
    assert_eq!(all, every);
    assert_eq!(sorted(&every), sorted(&created), "each once");
    let created = every;

    // Small pages walk the same list; a page exactly at the end links one empty page.
    let (mut walked, mut path, mut pages) = (Vec::new(), Some("/v1/approvals?status=pending&limit=7".to_string()), 0);
    while let Some(p) = path.take() {
        let (st, ids, next, _) = page(&s, &p).await;
        assert_eq!(st, 200, "{p}");
        assert!(ids.len() <= 7);
        walked.extend(ids);
        path = next;
        pages += 1;
    }
    assert_eq!((walked, pages), (created.clone(), 15));

    // A decided approval leaves the pending pages and shows under its status.
    let (st, _) = call(
        s.operator(Method::POST, &format!("/v1/approvals/{}/decision", created[0]))
            .json(&serde_json::json!({"action": "approve", "actor": "ops"})),
    )
    .await;
    assert_eq!(st, 200);
    let (_, approved, next, body) = page(&s, "/v1/approvals?status=approved&limit=1").await;
    assert_eq!((approved, next.is_some()), (vec![created[0].clone()], true), "{body}");
    let (_, all, _, _) = page(&s, "/v1/approvals?status=all&limit=1000").await;
    assert_eq!(sorted(&all), sorted(&created));

    // Bad paging input is refused with what to do.
    for (query, needle) in [
        ("limit=0", "limit must be between 1 and 1000"),
        ("limit=1001", "limit must be between 1 and 1000"),
        ("limit=x", "bad query string"),
        ("after=abc", "after must be a cursor from the Link header"),
        ("after=../../etc", "after must be a cursor from the Link header"),
    ] {
        let (st, ids, _, body) = page(&s, &format!("/v1/approvals?{query}")).await;
        assert_eq!((st, ids.len(), body["error"]["code"].as_str()), (422, 0, Some("invalid_request")), "{query}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(needle), "{query}: {body}");
    }

    // `plangate list` prints every page (101 lines over two pages), and
    // `--limit` stops early.
    let run = |args: &[&str]| {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(args).env("PLANGATE_URL", &s.base).env("PLANGATE_OPERATOR_TOKEN", OPERATOR_TOKEN).kill_on_drop(true);
        async move {
            let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("finished").expect("ran");
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        }
    };
    let listed: Vec<String> = run(&["list", "--status", "all"]).await.lines().map(|l| l.split(' ').next().unwrap().to_string()).collect();
    assert_eq!(listed, all);
    let three: Vec<String> = run(&["list", "--limit", "3"]).await.lines().map(|l| l.split(' ').next().unwrap().to_string()).collect();
    assert_eq!(three, created[1..4]);
}
