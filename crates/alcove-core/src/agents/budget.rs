//! The budget of a whole delegation tree (seed 004's global task budget).
//!
//! `agents.tree_max_tokens` and `agents.tree_max_turns` bound what all the
//! children of a session use together, so that each child cannot use up its
//! own limit in full. A child reserves, when it starts, its own limit or
//! what remains (whichever is smaller), runs within that reservation, and on
//! its end the reservation is replaced by what it really used (the rest is
//! refunded). A child that finds nothing left is refused with an error that
//! names the budget. The main agent's own turns are not counted: its cap is
//! `--max-turns`.

use std::sync::{Arc, Mutex};

/// Limits of the whole tree; `None` means unbounded.
#[derive(Debug, Default)]
pub struct TreeBudget {
    max_tokens: Option<u64>,
    max_turns: Option<u32>,
    state: Mutex<TreeUsage>,
}

/// What the tree used and holds in reservations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeUsage {
    /// Budget tokens ([`alcove_protocol::Usage::budget_tokens`]: every
    /// input token, cached or not, plus output) children that ended used.
    pub used_tokens: u64,
    /// Turns children that ended used.
    pub used_turns: u32,
    /// Tokens reserved by children still running.
    pub reserved_tokens: u64,
    /// Turns reserved by children still running.
    pub reserved_turns: u32,
}

/// One running child's share; dropping it without settling refunds it all.
#[derive(Debug)]
pub(crate) struct Reservation {
    budget: Arc<TreeBudget>,
    /// The child's token budget (its own limit, cut to what remained).
    pub(crate) tokens: Option<u64>,
    /// The child's turn cap (its own, cut to what remained).
    pub(crate) turns: u32,
    reserved_tokens: u64,
    reserved_turns: u32,
}

impl TreeBudget {
    /// A budget of `max_tokens` and `max_turns` for the tree.
    pub fn new(max_tokens: Option<u64>, max_turns: Option<u32>) -> TreeBudget {
        TreeBudget {
            max_tokens,
            max_turns,
            state: Mutex::new(TreeUsage::default()),
        }
    }

    /// Whether either limit is set.
    pub fn is_bounded(&self) -> bool {
        self.max_tokens.is_some() || self.max_turns.is_some()
    }

    /// What the tree used so far.
    pub fn usage(&self) -> TreeUsage {
        *self.lock()
    }

    /// One line for footers and `/status`: `tree: 7 of 12 turns, 900 of 5000 tokens used`.
    pub fn describe(&self) -> String {
        let usage = self.usage();
        let of = |used: u64, max: Option<u64>| match max {
            Some(max) => format!("{used} of {max}"),
            None => used.to_string(),
        };
        format!(
            "tree: {} turns, {} tokens used",
            of(u64::from(usage.used_turns), self.max_turns.map(u64::from)),
            of(usage.used_tokens, self.max_tokens)
        )
    }

    /// Reserves a child's share: `tokens` and `turns` are its own limits.
    pub(crate) fn reserve(
        self: &Arc<Self>,
        tokens: Option<u64>,
        turns: u32,
    ) -> Result<Reservation, String> {
        let mut state = self.lock();
        let left_turns = self.max_turns.map(|max| {
            max.saturating_sub(state.used_turns)
                .saturating_sub(state.reserved_turns)
        });
        let left_tokens = self.max_tokens.map(|max| {
            max.saturating_sub(state.used_tokens)
                .saturating_sub(state.reserved_tokens)
        });
        if let (Some(0), Some(max)) = (left_turns, self.max_turns) {
            return Err(format!(
                "the tree's turn budget is used up (agents.tree_max_turns = {max}: {} used, {} reserved by running agents)",
                state.used_turns, state.reserved_turns
            ));
        }
        if let (Some(0), Some(max)) = (left_tokens, self.max_tokens) {
            return Err(format!(
                "the tree's token budget is used up (agents.tree_max_tokens = {max}: {} used, {} reserved by running agents)",
                state.used_tokens, state.reserved_tokens
            ));
        }
        let turns = left_turns.map_or(turns, |left| turns.min(left));
        let tokens = match (tokens, left_tokens) {
            (Some(own), Some(left)) => Some(own.min(left)),
            (own, left) => own.or(left),
        };
        let reserved_turns = if self.max_turns.is_some() { turns } else { 0 };
        let reserved_tokens = if self.max_tokens.is_some() {
            tokens.unwrap_or(0)
        } else {
            0
        };
        state.reserved_turns += reserved_turns;
        state.reserved_tokens += reserved_tokens;
        Ok(Reservation {
            budget: self.clone(),
            tokens,
            turns,
            reserved_tokens,
            reserved_turns,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TreeUsage> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Reservation {
    /// Ends the reservation: `tokens` and `turns` were used, the rest is refunded.
    pub(crate) fn settle(self, tokens: u64, turns: u32) {
        let mut state = self.budget.lock();
        state.used_tokens = state.used_tokens.saturating_add(tokens);
        state.used_turns = state.used_turns.saturating_add(turns);
        // `Drop` gives the reservation back.
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut state = self.budget.lock();
        state.reserved_tokens = state.reserved_tokens.saturating_sub(self.reserved_tokens);
        state.reserved_turns = state.reserved_turns.saturating_sub(self.reserved_turns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_reserves_its_limit_or_what_remains_and_is_refunded_on_its_end() {
        let budget = Arc::new(TreeBudget::new(Some(1000), Some(10)));
        let first = budget.reserve(Some(600), 4).unwrap();
        let second = budget.reserve(Some(600), 4).unwrap();
        assert_eq!((second.tokens, second.turns), (Some(400), 4));
        let refused = budget.reserve(Some(600), 4).unwrap_err();
        assert!(
            refused.contains("agents.tree_max_tokens = 1000"),
            "{refused}"
        );
        first.settle(100, 1);
        let third = budget.reserve(None, 30).unwrap();
        assert_eq!((third.tokens, third.turns), (Some(500), 5));
        drop(third);
        second.settle(50, 2);
        assert_eq!(
            budget.usage(),
            TreeUsage {
                used_tokens: 150,
                used_turns: 3,
                reserved_tokens: 0,
                reserved_turns: 0
            }
        );
        assert_eq!(
            budget.describe(),
            "tree: 3 of 10 turns, 150 of 1000 tokens used"
        );
    }

    #[test]
    fn an_unbounded_tree_reserves_nothing_and_refuses_nothing() {
        let budget = Arc::new(TreeBudget::default());
        let share = budget.reserve(Some(5), 3).unwrap();
        assert_eq!((share.tokens, share.turns), (Some(5), 3));
        assert_eq!(budget.usage().reserved_turns, 0);
    }
}
