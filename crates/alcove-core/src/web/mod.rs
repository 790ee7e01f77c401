//! `WebFetch {url, prompt?}`: a page of the web, as Markdown.
//!
//! alcove fetches it itself (`fetch`), not through a command, so the
//! sandbox's network switch does not apply and the gate does: calls are
//! `Access::Network` (asked in `default` mode, refused in `plan` unless an
//! allow rule covers them), and `WebFetch(domain:docs.rs)` rules match the
//! URL's host. Loopback, private and link-local targets, found after DNS
//! resolution, are refused unless an allow rule names the host. HTML
//! becomes Markdown (htmd); the result is capped like any other.
//! `search`: `WebSearch`, only with a configured search endpoint.

mod address;
mod fetch;
mod search;

use alcove_protocol::ToolSpec;
use alcove_tools::{Access, Invocation, ScopedTool, ToolContext, ToolOutput, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::agents::AgentScope;
use fetch::{FetchLimits, Fetched};

pub(crate) use fetch::{host_of, parse as parse_url};
pub use search::{WEB_SEARCH, WebSearch};

/// The tool's name.
pub const WEB_FETCH: &str = "WebFetch";

const DESCRIPTION: &str = "Fetch a URL (http or https) and read it as Markdown. Give `prompt` to say what you look for in the page. A redirect to another host is reported, not followed.";

/// The most characters of Markdown returned (the result cap applies too).
const MAX_MARKDOWN: usize = 100_000;

/// Arguments of `WebFetch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebFetchInput {
    /// The URL.
    url: String,
    /// What to look for in the page.
    prompt: Option<String>,
}

/// The `WebFetch` tool.
pub struct WebFetch {
    spec: ToolSpec,
    limits: FetchLimits,
}

impl Default for WebFetch {
    fn default() -> WebFetch {
        WebFetch {
            spec: alcove_tools::tool_spec!(WebFetchInput, WEB_FETCH, DESCRIPTION),
            limits: FetchLimits::default(),
        }
    }
}

#[async_trait::async_trait]
impl ScopedTool<AgentScope> for WebFetch {
    type Input = WebFetchInput;
    type Call = WebFetchInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::Network
    }

    fn inspect(
        &self,
        input: WebFetchInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, WebFetchInput), String> {
        let url = parse_url(&input.url)?;
        host_of(&url)?;
        let invocation = Invocation {
            summary: url.to_string(),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, input))
    }

    /// The caller's gate says which non-public hosts a rule names.
    async fn call(
        &self,
        input: WebFetchInput,
        context: &ToolContext,
        scope: &AgentScope,
    ) -> ToolOutput {
        let gate = scope.run.gate.clone();
        let names = move |host: &str| gate.names_host(WEB_FETCH, host);
        let fetched = tokio::select! {
            fetched = fetch::fetch(&input.url, &names, self.limits) => fetched,
            () = context.cancel.cancelled() => return ToolOutput::error("Cancelled during the fetch."),
        };
        match fetched {
            Err(reason) => ToolOutput::error(format!("WebFetch: {reason}")),
            Ok(Fetched::CrossHost { from, to, status }) => ToolOutput::ok(format!(
                "{from} redirects (HTTP {status}) to another host: {to}\n\
                 alcove does not follow a redirect to another host. To read it, call WebFetch \
                 again with that URL."
            )),
            Ok(Fetched::Page {
                url,
                status,
                content_type,
                body,
                cut,
            }) => page(
                &url,
                status,
                &content_type,
                &body,
                cut,
                input.prompt.as_deref(),
            ),
        }
    }
}

alcove_tools::scoped_tool!(WebFetch, AgentScope);

/// The result for a fetched page: a header line, then the page as
/// Markdown (HTML converted, text as it is), framed as data.
fn page(
    url: &str,
    status: u16,
    content_type: &str,
    body: &[u8],
    cut: bool,
    prompt: Option<&str>,
) -> ToolOutput {
    let kind = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let text = String::from_utf8_lossy(body);
    let looks_html = kind.contains("html")
        || (kind.is_empty()
            && text.trim_start().get(..15).is_some_and(|head| {
                head.to_ascii_lowercase().starts_with("<!doctype html") || head.starts_with("<html")
            }));
    let textual = looks_html
        || kind.is_empty()
        || kind.starts_with("text/")
        || kind.contains("json")
        || kind.contains("xml")
        || kind.contains("javascript");
    if !textual {
        return ToolOutput::error(format!(
            "WebFetch: {url} is {kind} ({} bytes), not a page alcove can read as text",
            body.len()
        ));
    }
    let markdown = if looks_html {
        match htmd::convert(&text) {
            Ok(markdown) => markdown,
            Err(err) => return ToolOutput::error(format!("WebFetch: cannot convert {url}: {err}")),
        }
    } else {
        text.into_owned()
    };
    let markdown = markdown.trim();
    let (shown, more) = match markdown.char_indices().nth(MAX_MARKDOWN) {
        Some((end, _)) => (&markdown[..end], true),
        None => (markdown, false),
    };
    let mut out = format!(
        "URL: {url}\nHTTP {status} · {}",
        if kind.is_empty() {
            "unknown type"
        } else {
            &kind
        }
    );
    if cut {
        out.push_str(" · the body was cut at the size cap");
    }
    if let Some(prompt) = prompt.filter(|prompt| !prompt.trim().is_empty()) {
        out.push_str(&format!("\nLooking for: {}", prompt.trim()));
    }
    out.push_str("\n\n");
    out.push_str(&alcove_tools::frame_untrusted(
        &format!("WebFetch {url}"),
        shown,
    ));
    if more {
        out.push_str(&format!("\n\n[... cut at {MAX_MARKDOWN} characters ...]"));
    }
    ToolOutput::ok(out).with_effects(alcove_protocol::Effects {
        bytes: Some(body.len() as u64),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_markdown_and_binary_is_refused() {
        let html = b"<html><body><h1>Title</h1><p>Some <b>bold</b> text.</p></body></html>";
        let out = page(
            "http://x/",
            200,
            "text/html; charset=utf-8",
            html,
            false,
            Some("the title"),
        );
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("# Title"), "{}", out.content);
        assert!(out.content.contains("**bold**"), "{}", out.content);
        assert!(out.content.contains("Looking for: the title"));
        let png = page("http://x/a.png", 200, "image/png", b"\x89PNG", false, None);
        assert!(png.is_error);
    }

    #[test]
    fn the_input_is_claude_codes_and_only_http_urls_pass() {
        let tool = WebFetch::default();
        let schema = tool.spec().input_schema.to_value();
        assert_eq!(schema["required"], serde_json::json!(["url"]));
        let workspace = Workspace::new(&std::env::temp_dir()).unwrap();
        let inspect = |input: serde_json::Value| {
            alcove_tools::Tool::<AgentScope>::prepare(&tool, &input, &workspace)
                .map(|call| call.invocation)
        };
        let ok = inspect(serde_json::json!({"url": "https://docs.rs/x"}));
        assert_eq!(ok.unwrap().summary, "https://docs.rs/x");
        let file = inspect(serde_json::json!({"url": "file:///etc/passwd"}));
        assert!(file.unwrap_err().contains("only http and https"));
    }
}
