//! With the `published-schemas` feature, a strict server refuses a body
//! that breaks its wire's published request schema, as the real API
//! refuses an unknown field, and takes the same body without it.

#![cfg(feature = "published-schemas")]

mod common;

use alcove_testkit::{FakeServer, Script, Step};
use common::{anthropic_body, openai_body, post_anthropic, post_openai, text_of};
use serde_json::json;

#[tokio::test]
async fn an_unknown_field_is_refused_on_both_wires_and_the_body_without_it_answered() {
    let server = FakeServer::start(
        Script::new()
            .conversation("anthropic", vec![Step::text("ok")])
            .conversation("openai", vec![Step::text("ok")]),
    );
    let mut body = anthropic_body("anthropic");
    body["reasoning_effort"] = json!("high");
    let refused = post_anthropic(&server, &body).await;
    assert_eq!(refused.status(), 400);
    let text = text_of(refused).await;
    assert!(text.contains("reasoning_effort"), "{text}");
    assert!(text.contains("anthropic-messages.json"), "{text}");
    body.as_object_mut().map(|b| b.remove("reasoning_effort"));
    assert_eq!(post_anthropic(&server, &body).await.status(), 200);

    let mut body = openai_body("openai", true);
    body["output_config"] = json!({"effort": "high"});
    let refused = post_openai(&server, &body).await;
    assert_eq!(refused.status(), 400);
    let text = text_of(refused).await;
    assert!(text.contains("output_config"), "{text}");
    body.as_object_mut().map(|b| b.remove("output_config"));
    assert_eq!(post_openai(&server, &body).await.status(), 200);
    server.assert_script_finished();
}
