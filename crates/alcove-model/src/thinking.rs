//! What an Anthropic request asks for in thinking and effort, from the
//! configured [`Thinking`], the effort and the model's name.
//!
//! The Messages API takes two shapes of `thinking`: `{"type": "adaptive"}`
//! (the model decides how much to think; Claude Opus 4.6, Sonnet 4.6 and
//! later, per Anthropic's extended-thinking documentation) and
//! `{"type": "enabled", "budget_tokens": N}` (every model with extended
//! thinking: Claude 3.7 Sonnet and the 4 family), where `budget_tokens` is
//! at least 1,024 and below `max_tokens`. The effort goes in
//! `output_config.effort` (Claude Opus 4.5, and the 4.6 models), which a
//! model without it refuses, so it is sent only to those; elsewhere it only
//! picks the budget adaptive thinking falls back to. Thinking is
//! incompatible with a `temperature` other than 1: none is sent with it.

use serde::Serialize;

use crate::Thinking;

/// The smallest budget the API accepts.
pub(crate) const MIN_BUDGET: u32 = 1024;

/// `thinking` in a Messages request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ThinkingJson {
    Adaptive,
    Enabled { budget_tokens: u32 },
}

/// `output_config` in a Messages request body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct OutputConfigJson {
    pub(crate) effort: String,
}

/// What one request asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Plan {
    pub(crate) thinking: Option<ThinkingJson>,
    pub(crate) output_config: Option<OutputConfigJson>,
    /// The request's `max_tokens`, raised to hold a thinking budget.
    pub(crate) max_tokens: u32,
}

/// The plan for `model` with the configured `thinking` and `effort` (the
/// request's, else the provider's) and the answer's `max_tokens`.
pub(crate) fn plan(model: &str, thinking: Thinking, effort: Option<&str>, max_tokens: u32) -> Plan {
    let version = ClaudeVersion::parse(model);
    let adaptive = version.is_some_and(|v| v.takes_adaptive());
    let effort = effort.map(anthropic_effort);
    let thinking = match thinking {
        Thinking::Off => None,
        Thinking::Default if adaptive => Some(ThinkingJson::Adaptive),
        Thinking::Default => None,
        Thinking::Adaptive if adaptive => Some(ThinkingJson::Adaptive),
        Thinking::Adaptive => Some(ThinkingJson::Enabled {
            budget_tokens: budget_for(effort),
        }),
        Thinking::Budget(tokens) => Some(ThinkingJson::Enabled {
            budget_tokens: tokens.max(MIN_BUDGET),
        }),
    };
    let max_tokens = match thinking {
        Some(ThinkingJson::Enabled { budget_tokens }) => max_tokens.saturating_add(budget_tokens),
        _ => max_tokens,
    };
    let output_config = effort
        .filter(|_| version.is_some_and(|v| v.takes_effort()))
        .map(|effort| OutputConfigJson {
            effort: effort.to_owned(),
        });
    Plan {
        thinking,
        output_config,
        max_tokens,
    }
}

/// The effort in Anthropic's words (`low`, `medium`, `high`, `max`):
/// OpenAI's `minimal` is `low`, its `xhigh` is `max`.
fn anthropic_effort(effort: &str) -> &str {
    match effort {
        "minimal" => "low",
        "xhigh" => "max",
        other => other,
    }
}

/// The budget adaptive thinking falls back to on an older model: Claude
/// Code's "think", "think hard" and "ultrathink" budgets.
fn budget_for(effort: Option<&str>) -> u32 {
    match effort {
        Some("low") => 4_000,
        Some("high" | "max") => 31_999,
        _ => 10_000,
    }
}

/// A Claude model's family and version, read from its name
/// (`claude-opus-4-6`, `claude-sonnet-4-5-20250929`, `claude-3-7-sonnet-…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ClaudeVersion {
    family: Family,
    major: u32,
    minor: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Opus,
    Sonnet,
    Haiku,
}

impl ClaudeVersion {
    fn parse(model: &str) -> Option<ClaudeVersion> {
        // A provider prefix (`anthropic/`, `us.anthropic.`) is not the name.
        let name = model.rsplit(['/', '.']).next().unwrap_or(model);
        let name = name.strip_prefix("claude-")?;
        let parts: Vec<&str> = name.split('-').collect();
        let family_at = parts
            .iter()
            .position(|part| matches!(*part, "opus" | "sonnet" | "haiku"))?;
        let family = match parts[family_at] {
            "opus" => Family::Opus,
            "sonnet" => Family::Sonnet,
            _ => Family::Haiku,
        };
        // A version number is one or two digits; eight are a date.
        let number =
            |part: &&str| -> Option<u32> { (part.len() <= 2).then(|| part.parse().ok()).flatten() };
        let (major, minor) = if family_at == 0 {
            // claude-opus-4-6, claude-sonnet-4-20250514
            let major = parts.get(1).and_then(number)?;
            (major, parts.get(2).and_then(number).unwrap_or(0))
        } else {
            // claude-3-7-sonnet-20250219
            let major = parts.first().and_then(number)?;
            let minor = if family_at >= 2 {
                parts.get(1).and_then(number).unwrap_or(0)
            } else {
                0
            };
            (major, minor)
        };
        Some(ClaudeVersion {
            family,
            major,
            minor,
        })
    }

    fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    fn takes_adaptive(&self) -> bool {
        self.family != Family::Haiku && self.at_least(4, 6)
    }

    fn takes_effort(&self) -> bool {
        match self.family {
            Family::Opus => self.at_least(4, 5),
            Family::Sonnet => self.at_least(4, 6),
            Family::Haiku => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_names() {
        let v = |name| ClaudeVersion::parse(name).map(|v| (v.family, v.major, v.minor));
        assert_eq!(v("claude-opus-4-6"), Some((Family::Opus, 4, 6)));
        assert_eq!(
            v("claude-sonnet-4-5-20250929"),
            Some((Family::Sonnet, 4, 5))
        );
        assert_eq!(v("claude-sonnet-4-20250514"), Some((Family::Sonnet, 4, 0)));
        assert_eq!(
            v("claude-3-7-sonnet-20250219"),
            Some((Family::Sonnet, 3, 7))
        );
        assert_eq!(v("anthropic/claude-opus-4-5"), Some((Family::Opus, 4, 5)));
        assert_eq!(v("fake-model"), None);
    }

    #[test]
    fn adaptive_where_the_model_takes_it_else_a_budget() {
        let p = plan("claude-opus-4-6", Thinking::Default, Some("high"), 8192);
        assert_eq!(p.thinking, Some(ThinkingJson::Adaptive));
        assert_eq!(p.max_tokens, 8192);
        assert_eq!(p.output_config.map(|c| c.effort), Some("high".into()));

        let p = plan("claude-sonnet-4-5", Thinking::Default, Some("high"), 8192);
        assert_eq!(
            p,
            Plan {
                max_tokens: 8192,
                ..Plan::default()
            }
        );

        let p = plan("claude-sonnet-4-5", Thinking::Adaptive, Some("low"), 8192);
        assert_eq!(
            p.thinking,
            Some(ThinkingJson::Enabled {
                budget_tokens: 4_000
            })
        );
        assert_eq!(p.max_tokens, 12_192);
        assert_eq!(p.output_config, None);

        let p = plan(
            "claude-opus-4-5",
            Thinking::Budget(100),
            Some("xhigh"),
            1000,
        );
        assert_eq!(
            p.thinking,
            Some(ThinkingJson::Enabled {
                budget_tokens: MIN_BUDGET
            })
        );
        assert_eq!(p.max_tokens, 1000 + MIN_BUDGET);
        assert_eq!(p.output_config.map(|c| c.effort), Some("max".into()));

        let p = plan("claude-opus-4-6", Thinking::Off, None, 10);
        assert_eq!(
            p,
            Plan {
                max_tokens: 10,
                ..Plan::default()
            }
        );
    }
}
