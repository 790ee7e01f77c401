//! `WebSearch {query, allowed_domains?, blocked_domains?}`: offered only
//! when `[web] search_url` names a SearXNG-compatible endpoint (its JSON
//! API: `GET <search_url>?q=…&format=json` answering
//! `{"results": [{"title", "url", "content"}]}`). alcove has no search
//! service of its own; the endpoint is the user's, so it may be on
//! loopback without a rule. Calls are `Access::Network` like `WebFetch`.

use std::time::Duration;

use alcove_protocol::ToolSpec;
use alcove_tools::{Access, Invocation, ToolContext, ToolOutput, TypedTool, Workspace};
use schemars::JsonSchema;
use serde::Deserialize;

use super::fetch::{host_of, parse as parse_url};

/// The tool's name.
pub const WEB_SEARCH: &str = "WebSearch";

const DESCRIPTION: &str =
    "Search the web; returns titles, URLs and snippets. Read a result with WebFetch.";

/// The most results listed.
const MAX_RESULTS: usize = 10;
/// The most bytes of the endpoint's answer read.
const MAX_BYTES: usize = 2 * 1024 * 1024;
/// How long a search may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Arguments of `WebSearch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebSearchInput {
    /// The query.
    query: String,
    /// Only results from these hosts.
    allowed_domains: Option<Vec<String>>,
    /// No results from these hosts.
    blocked_domains: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct Answer {
    #[serde(default)]
    results: Vec<Hit>,
}

#[derive(Debug, Deserialize)]
struct Hit {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    content: String,
}

/// The `WebSearch` tool, on one endpoint.
pub struct WebSearch {
    spec: ToolSpec,
    endpoint: reqwest::Url,
}

impl WebSearch {
    /// The tool on `search_url`, or why that is not an endpoint.
    pub fn new(search_url: &str) -> Result<WebSearch, String> {
        let endpoint = parse_url(search_url).map_err(|why| format!("[web] search_url: {why}"))?;
        Ok(WebSearch {
            spec: alcove_tools::tool_spec!(WebSearchInput, WEB_SEARCH, DESCRIPTION),
            endpoint,
        })
    }
}

#[async_trait::async_trait]
impl TypedTool for WebSearch {
    type Input = WebSearchInput;
    type Call = WebSearchInput;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn access(&self) -> Access {
        Access::Network
    }

    fn inspect(
        &self,
        input: WebSearchInput,
        _workspace: &Workspace,
    ) -> Result<(Invocation, WebSearchInput), String> {
        if input.query.trim().is_empty() {
            return Err("the query is empty".to_owned());
        }
        let invocation = Invocation {
            summary: input.query.clone(),
            paths: Vec::new(),
            command: None,
        };
        Ok((invocation, input))
    }

    async fn call(&self, input: WebSearchInput, context: &ToolContext) -> ToolOutput {
        let answer = tokio::select! {
            answer = self.search(&input.query) => answer,
            () = context.cancel.cancelled() => return ToolOutput::error("Cancelled during the search."),
        };
        match answer {
            Ok(answer) => ToolOutput::ok(listing(&input, answer)),
            Err(reason) => ToolOutput::error(format!("WebSearch: {reason}")),
        }
    }
}

impl WebSearch {
    async fn search(&self, query: &str) -> Result<Answer, String> {
        let mut url = self.endpoint.clone();
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        let client = alcove_model::http_client_builder(&[url.as_str()])
            .timeout(TIMEOUT)
            .build()
            .map_err(|err| format!("cannot make an HTTP client: {err}"))?;
        let mut response = client.get(url).send().await.map_err(|err| {
            format!(
                "the search service at {} did not answer: {err}",
                self.endpoint
            )
        })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("the search service answered HTTP {status}"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| format!("the answer broke off: {err}"))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_BYTES {
                return Err(format!("the answer is over {MAX_BYTES} bytes"));
            }
        }
        serde_json::from_slice(&body).map_err(|err| {
            format!(
                "the search service's answer is not SearXNG's JSON ({err}); is format=json enabled?"
            )
        })
    }
}

/// The results as a numbered Markdown list, filtered by the domains asked.
fn listing(input: &WebSearchInput, answer: Answer) -> String {
    let host_in = |url: &str, domains: &[String]| {
        parse_url(url)
            .ok()
            .and_then(|url| host_of(&url).ok())
            .is_some_and(|host| {
                domains.iter().any(|domain| {
                    let domain = domain.trim().to_ascii_lowercase();
                    host == domain || host.ends_with(&format!(".{domain}"))
                })
            })
    };
    let hits: Vec<Hit> = answer
        .results
        .into_iter()
        .filter(|hit| {
            input
                .allowed_domains
                .as_deref()
                .is_none_or(|domains| domains.is_empty() || host_in(&hit.url, domains))
                && !input
                    .blocked_domains
                    .as_deref()
                    .is_some_and(|domains| host_in(&hit.url, domains))
        })
        .take(MAX_RESULTS)
        .collect();
    if hits.is_empty() {
        return format!("No results for {:?}.", input.query);
    }
    let mut out = format!("Results for {:?}:\n", input.query);
    for (n, hit) in hits.iter().enumerate() {
        let title = if hit.title.trim().is_empty() {
            &hit.url
        } else {
            hit.title.trim()
        };
        out.push_str(&format!("\n{}. [{title}]({})", n + 1, hit.url));
        let snippet = hit.content.split_whitespace().collect::<Vec<_>>().join(" ");
        if !snippet.is_empty() {
            let snippet: String = snippet.chars().take(400).collect();
            out.push_str(&format!("\n   {snippet}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_listed_and_filtered_by_domain_and_a_bad_endpoint_is_refused() {
        let tool = WebSearch::new("http://127.0.0.1:8888/search").unwrap();
        assert_eq!(
            tool.spec().input_schema.to_value()["required"],
            serde_json::json!(["query"])
        );
        assert!(WebSearch::new("ftp://x/").is_err());
        let answer: Answer = serde_json::from_value(serde_json::json!({"results": [
            {"title": "A", "url": "https://docs.rs/a", "content": "first\n  hit"},
            {"title": "B", "url": "https://other.example/b"},
        ]}))
        .unwrap();
        let input = WebSearchInput {
            query: "q".to_owned(),
            allowed_domains: Some(vec!["docs.rs".to_owned()]),
            blocked_domains: None,
        };
        let text = listing(&input, answer);
        assert!(
            text.contains("1. [A](https://docs.rs/a)\n   first hit"),
            "{text}"
        );
        assert!(!text.contains("other.example"), "{text}");
    }
}
