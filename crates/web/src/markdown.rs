//! Agent-written markdown as safe HTML.
//!
//! pulldown-cmark turns the markdown into HTML, raw HTML included; ammonia
//! then keeps only an allowlist of tags and attributes, links only to
//! `http`/`https`/`mailto` with `rel="noopener noreferrer nofollow"`, and no
//! script, style, event handler, form or image (an image would call out to
//! wherever the agent pointed it the moment the page opens). Agent text never
//! becomes script or a live link to somewhere unexpected.

use pulldown_cmark::{html, Options, Parser};
use std::collections::HashSet;

/// `markdown` rendered and sanitized; safe to put into the page as is.
pub fn to_safe_html(markdown: &str) -> String {
    let mut raw = String::new();
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    html::push_html(&mut raw, Parser::new_ext(markdown, options));
    sanitize(&raw)
}

/// Clean HTML through ammonia's allowlist (see the module doc).
pub fn sanitize(raw: &str) -> String {
    let tags: HashSet<&str> = [
        "a",
        "p",
        "br",
        "hr",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ul",
        "ol",
        "li",
        "blockquote",
        "pre",
        "code",
        "em",
        "strong",
        "del",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "input",
    ]
    .into_iter()
    .collect();
    let schemes: HashSet<&str> = ["http", "https", "mailto"].into_iter().collect();
    ammonia::Builder::new()
        .tags(tags)
        .tag_attributes([("a", ["href"].into_iter().collect()), ("input", ["type", "checked", "disabled"].into_iter().collect())].into())
        .generic_attributes(HashSet::new())
        .url_schemes(schemes)
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(raw)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn javascript_links_lose_their_href() {
        let html = to_safe_html("[click me](javascript:alert(1)) and [data](data:text/html,hi)");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("data:"), "{html}");
        assert!(html.contains("click me"), "{html}");
    }

    #[test]
    fn http_links_stay_with_a_safe_rel() {
        let html = to_safe_html("[docs](https://example.com/a)");
        assert_eq!(html, "<p><a href=\"https://example.com/a\" rel=\"noopener noreferrer nofollow\">docs</a></p>\n");
    }

    #[test]
    fn raw_html_script_and_handlers_are_removed() {
        let html = to_safe_html(
            "hi <script>alert(1)</script><img src=x onerror=alert(2)><b onclick=\"x()\">b</b>\n\n<iframe src=\"https://e.com\"></iframe>",
        );
        for bad in ["<script", "alert(1)", "<img", "onerror", "onclick", "<iframe"] {
            assert!(!html.contains(bad), "{bad} in {html}");
        }
    }

    #[test]
    fn relative_links_are_not_live() {
        let html = to_safe_html("[here](/v1/approvals) [there](//evil.example/x)");
        assert!(!html.contains("href"), "{html}");
    }
}
