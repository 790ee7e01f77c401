//! `alcove mcp serve --http ADDR`: the same server over MCP's Streamable
//! HTTP transport (rmcp's server side, on hyper), so an alcove on a build
//! box can serve a client through an ssh tunnel.
//!
//! Every request must carry `Authorization: Bearer <token>`, the token read
//! from `ALCOVE_MCP_TOKEN` or generated at start and printed to stderr; a
//! request without it, or with another, is answered 401 before it reaches
//! the MCP service (no session, no tool, no model request). The address
//! must be a loopback one unless `--http-allow-remote` is given, and then
//! a warning is printed. rmcp's own `Host` check (loopback names only)
//! stays on for loopback addresses, against DNS rebinding.

use std::convert::Infallible;
use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The environment variable a client's token is read from.
pub(crate) const TOKEN_VARIABLE: &str = "ALCOVE_MCP_TOKEN";

/// The path the MCP endpoint is served at.
const ENDPOINT: &str = "/mcp";

/// A bound listener and what to serve on it.
pub(crate) struct HttpEndpoint {
    listener: TcpListener,
    token: String,
    allow_remote: bool,
}

/// Checks the address and the token, and binds, before the session opens:
/// a bad address, an empty token or a port in use is an error, not a
/// server that cannot be reached.
pub(crate) async fn bind(addr: SocketAddr, allow_remote: bool) -> anyhow::Result<HttpEndpoint> {
    if !addr.ip().is_loopback() && !allow_remote {
        anyhow::bail!(
            "--http {addr} is not a loopback address; alcove serves MCP over HTTP on loopback \
             only (reach it through an ssh tunnel), unless --http-allow-remote is given"
        );
    }
    let (token, generated) = match std::env::var(TOKEN_VARIABLE) {
        Ok(token) if token.trim().is_empty() => {
            anyhow::bail!("{TOKEN_VARIABLE} is set but empty; unset it to get a generated token")
        }
        Ok(token) => (token, false),
        Err(_) => (generate_token()?, true),
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|err| anyhow::anyhow!("--http {addr}: cannot listen: {err}"))?;
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() {
        eprintln!(
            "alcove mcp serve: WARNING: serving on {bound}, which other machines may reach; \
             anyone with the token can run agents in this folder. Traffic is plain HTTP: use \
             it on a network you trust or behind TLS."
        );
    }
    eprintln!("alcove mcp serve: Streamable HTTP at http://{bound}{ENDPOINT}");
    if generated {
        eprintln!("alcove mcp serve: bearer token (set {TOKEN_VARIABLE} to choose one): {token}");
    } else {
        eprintln!("alcove mcp serve: bearer token from {TOKEN_VARIABLE}");
    }
    Ok(HttpEndpoint {
        listener,
        token,
        allow_remote,
    })
}

/// 32 random bytes from the system, as hex.
fn generate_token() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|err| anyhow::anyhow!("cannot make a token ({err}); set {TOKEN_VARIABLE}"))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Serves `new_server()` (one handler per MCP session) on `endpoint` until
/// `stop` is cancelled.
pub(crate) async fn serve<S>(
    endpoint: HttpEndpoint,
    new_server: impl Fn() -> S + Send + Sync + 'static,
    stop: CancellationToken,
) -> Option<String>
where
    S: ServerHandler + Send + 'static,
{
    let mut config =
        StreamableHttpServerConfig::default().with_cancellation_token(stop.child_token());
    if endpoint.allow_remote {
        // Remote clients name the box by its own name; the token guards it.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(new_server()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let expected = Arc::new(format!("Bearer {}", endpoint.token));
    loop {
        let stream = tokio::select! {
            accepted = endpoint.listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => return Some(format!("the HTTP listener failed: {err}")),
            },
            () = stop.cancelled() => return None,
        };
        let (service, expected, stop) = (service.clone(), expected.clone(), stop.clone());
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let (service, expected) = (service.clone(), expected.clone());
                async move { Ok::<_, Infallible>(answer(&service, &expected, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler);
            tokio::select! {
                _ = connection => {}
                () = stop.cancelled() => {}
            }
        });
    }
}

/// One request: the endpoint's path and the token first, then MCP.
async fn answer<S>(
    service: &StreamableHttpService<S, LocalSessionManager>,
    expected: &str,
    request: Request<Incoming>,
) -> Response<BoxBody<Bytes, Infallible>>
where
    S: ServerHandler + Send + 'static,
{
    if request.uri().path() != ENDPOINT {
        return plain(
            StatusCode::NOT_FOUND,
            format!("alcove serves MCP at {ENDPOINT}"),
        );
    }
    let presented = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .map(|value| value.as_bytes());
    if !presented.is_some_and(|presented| same_secret(presented, expected.as_bytes())) {
        let mut response = plain(
            StatusCode::UNAUTHORIZED,
            format!(
                "a bearer token is required: Authorization: Bearer <token> (the token alcove \
                 printed at start, or {TOKEN_VARIABLE})"
            ),
        );
        response.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer realm=\"alcove\""),
        );
        return response;
    }
    service.handle(request).await
}

fn plain(status: StatusCode, text: String) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

/// Compares in time that depends on the length only, not on where the
/// first difference is.
fn same_secret(presented: &[u8], expected: &[u8]) -> bool {
    presented.len() == expected.len()
        && presented
            .iter()
            .zip(expected)
            .fold(0u8, |diff, (left, right)| diff | (left ^ right))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_secret_matches() {
        assert!(same_secret(b"Bearer abc", b"Bearer abc"));
        assert!(!same_secret(b"Bearer abd", b"Bearer abc"));
        assert!(!same_secret(b"Bearer ab", b"Bearer abc"));
        assert!(!same_secret(b"", b"Bearer abc"));
    }

    #[test]
    fn a_generated_token_is_long_and_fresh() {
        let (one, two) = (generate_token().unwrap(), generate_token().unwrap());
        assert_eq!(one.len(), 64);
        assert_ne!(one, two);
    }
}
