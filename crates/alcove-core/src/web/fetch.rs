//! One `WebFetch`: alcove's own HTTP GET (not a sandboxed command), with a
//! timeout, a size cap and a redirect limit. The target is resolved first
//! and checked ([`super::address`]); the connection goes to the address that
//! was checked, so a name that resolves differently the second time cannot
//! slip past. A redirect to another host is returned, not followed.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION, USER_AGENT};

use super::address::is_public;

/// The limits of one fetch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FetchLimits {
    /// The whole fetch, redirects included.
    pub(crate) timeout: Duration,
    /// The most body bytes read; the rest is cut.
    pub(crate) max_bytes: usize,
    /// The most same-host redirects followed.
    pub(crate) max_redirects: usize,
}

impl Default for FetchLimits {
    fn default() -> FetchLimits {
        FetchLimits {
            timeout: Duration::from_secs(30),
            max_bytes: 5 * 1024 * 1024,
            max_redirects: 5,
        }
    }
}

/// What a fetch got.
#[derive(Debug)]
pub(crate) enum Fetched {
    /// A response that is not a redirect.
    Page {
        url: String,
        status: u16,
        content_type: String,
        body: Vec<u8>,
        /// Whether the body was cut at the size cap.
        cut: bool,
    },
    /// A redirect to another host, for the model to decide about.
    CrossHost {
        from: String,
        to: String,
        status: u16,
    },
}

/// Fetches `url`. `may_reach_private(host)` says whether a rule names a
/// host whose addresses are not public.
pub(crate) async fn fetch(
    url: &str,
    may_reach_private: &(dyn Fn(&str) -> bool + Sync),
    limits: FetchLimits,
) -> Result<Fetched, String> {
    let work = fetch_following(url, may_reach_private, limits);
    match tokio::time::timeout(limits.timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "the fetch of {url} took longer than {}s and was stopped",
            limits.timeout.as_secs()
        )),
    }
}

async fn fetch_following(
    url: &str,
    may_reach_private: &(dyn Fn(&str) -> bool + Sync),
    limits: FetchLimits,
) -> Result<Fetched, String> {
    let mut url = parse(url)?;
    let first_host = host_of(&url)?;
    for _ in 0..=limits.max_redirects {
        let host = host_of(&url)?;
        let address = checked_address(&url, &host, may_reach_private).await?;
        let client = alcove_model::http_client_builder(&[url.as_str()])
            .redirect(reqwest::redirect::Policy::none())
            .resolve(&host, address)
            .connect_timeout(limits.timeout)
            .build()
            .map_err(|err| format!("cannot make an HTTP client: {err}"))?;
        let response = client
            .get(url.clone())
            .header(USER_AGENT, concat!("alcove/", env!("CARGO_PKG_VERSION")))
            .header(
                ACCEPT,
                "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|err| format!("cannot fetch {url}: {}", error_chain(&err)))?;
        let status = response.status();
        if status.is_redirection() {
            let Some(location) = response
                .headers()
                .get(LOCATION)
                .and_then(|value| value.to_str().ok())
            else {
                return Err(format!("{url} answered {status} without a Location"));
            };
            let next = url
                .join(location)
                .map_err(|err| format!("{url} redirects to a bad URL {location:?}: {err}"))?;
            if !host_of(&next)?.eq_ignore_ascii_case(&first_host) {
                return Ok(Fetched::CrossHost {
                    from: url.to_string(),
                    to: next.to_string(),
                    status: status.as_u16(),
                });
            }
            url = next;
            continue;
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let (body, cut) = read_capped(response, limits.max_bytes).await?;
        return Ok(Fetched::Page {
            url: url.to_string(),
            status: status.as_u16(),
            content_type,
            body,
            cut,
        });
    }
    Err(format!(
        "{url} redirected more than {} times",
        limits.max_redirects
    ))
}

/// `url` as a URL alcove fetches: http or https only.
pub(crate) fn parse(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url.trim()).map_err(|err| format!("not a URL ({err}): {url}"))?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(format!(
            "only http and https URLs are fetched, not {other}:"
        )),
    }
}

/// The URL's host, lower case, without IPv6 brackets.
pub(crate) fn host_of(url: &Url) -> Result<String, String> {
    let host = url
        .host_str()
        .ok_or_else(|| format!("{url} names no host"))?;
    Ok(host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase())
}

/// The address to connect to: the host resolved, every address checked.
async fn checked_address(
    url: &Url,
    host: &str,
    may_reach_private: &(dyn Fn(&str) -> bool + Sync),
) -> Result<SocketAddr, String> {
    let port = url.port_or_known_default().unwrap_or(80);
    let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host, port))
            .await
            .map_err(|err| format!("cannot resolve {host}: {err}"))?
            .collect(),
    };
    let Some(first) = addresses.first().copied() else {
        return Err(format!("{host} resolves to no address"));
    };
    if let Some(private) = addresses.iter().find(|address| !is_public(address.ip()))
        && !may_reach_private(host)
    {
        return Err(format!(
            "refused: {host} is {}, a loopback, private or link-local address, which WebFetch \
             reaches only when an allow rule names the host: --allow 'WebFetch(domain:{host})'",
            private.ip()
        ));
    }
    Ok(first)
}

/// The body, at most `max_bytes` of it, and whether it was cut.
async fn read_capped(
    mut response: reqwest::Response,
    max_bytes: usize,
) -> Result<(Vec<u8>, bool), String> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| format!("the response broke off: {}", error_chain(&err)))?
    {
        let room = max_bytes - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
