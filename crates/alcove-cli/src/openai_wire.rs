//! Which OpenAI wire a model is spoken to on, and what reasoning it is
//! asked for by default.
//!
//! OpenAI serves some models only at `/v1/responses` (Chat Completions
//! answers "only supported in v1/responses"): the codex family
//! (`gpt-5-codex`, `gpt-5.1-codex-max`, `codex-mini-latest`, …), the `-pro`
//! models and the deep-research ones. The built-in `openai` provider speaks
//! Responses to those and to the whole gpt-5 family (as Codex CLI does: the
//! reasoning then survives tool calls), Chat Completions to the rest;
//! `wire = "responses" | "chat"` in `[model_options]` overrides the choice.
//!
//! Reasoning defaults follow Codex CLI: a reasoning model on Responses is
//! asked for `reasoning: {effort: "medium", summary: "auto"}`. On Chat
//! Completions no effort is sent unless one is configured (`effort`, or
//! its other name `reasoning_effort`) or asked by an agent's definition or
//! `Agent` call. On both, an effort goes only to a model that takes it
//! (o-series, gpt-5, codex, gpt-oss) or one it was configured for by name.

/// The effort a reasoning model gets on Responses unless configured.
pub(crate) const DEFAULT_EFFORT: &str = "medium";
/// The reasoning summary asked for on Responses unless configured.
pub(crate) const DEFAULT_SUMMARY: &str = "auto";

/// The model name without an `openai/`-style routing prefix, lowercased.
fn bare(model: &str) -> String {
    model
        .rsplit_once('/')
        .map_or(model, |(_, name)| name)
        .to_ascii_lowercase()
}

/// Whether the built-in `openai` provider speaks Responses to `model`.
pub(crate) fn prefers_responses(model: &str) -> bool {
    let name = bare(model);
    name.contains("codex")
        || (name.starts_with("gpt-5") && !name.contains("chat"))
        || name.ends_with("-pro")
        || name.contains("-pro-")
        || name.contains("deep-research")
        || name.starts_with("computer-use")
}

/// Whether `model` reasons and takes a reasoning effort.
pub(crate) fn takes_reasoning(model: &str) -> bool {
    let name = bare(model);
    let o_series = ["o1", "o3", "o4"]
        .iter()
        .any(|series| name == *series || name.starts_with(&format!("{series}-")));
    o_series
        || name.contains("codex")
        || (name.starts_with("gpt-5") && !name.contains("chat"))
        || name.starts_with("gpt-oss")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_pro_and_gpt5_models_go_to_responses() {
        for model in [
            "gpt-5-codex",
            "gpt-5.1-codex-max",
            "codex-mini-latest",
            "gpt-5",
            "gpt-5.1",
            "o3-pro",
            "gpt-5-pro",
            "o4-mini-deep-research",
            "openai/gpt-5-codex",
        ] {
            assert!(prefers_responses(model), "{model}");
        }
        for model in [
            "gpt-4.1",
            "gpt-4o",
            "o3",
            "o4-mini",
            "gpt-5-chat-latest",
            "fake-model",
        ] {
            assert!(!prefers_responses(model), "{model}");
        }
    }

    #[test]
    fn reasoning_models_are_known_by_family() {
        for model in [
            "o1",
            "o3-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5-codex",
            "gpt-oss-20b",
        ] {
            assert!(takes_reasoning(model), "{model}");
        }
        for model in [
            "gpt-4.1",
            "gpt-4o-mini",
            "gpt-5-chat-latest",
            "llama3.2",
            "omni-x",
        ] {
            assert!(!takes_reasoning(model), "{model}");
        }
    }
}
