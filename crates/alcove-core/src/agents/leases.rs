//! The supervisor's room of delegation limits and slots: the two pools of
//! slots (synchronous `Agent` children, spawned children) and the tree
//! budget, and the [`Lease`] a child holds of them for one submission.
//!
//! A lease is a slot, then a share of the tree budget; either refused, the
//! caller gets a [`StartError`] naming the limit and holds nothing. The
//! slot is given back and the tree charged what was used when the child's
//! life settles it (`ChildLife::live`), whatever way the run ended (the
//! permit is RAII).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::budget::{Reservation, TreeBudget};
use super::start_error::StartError;
use super::supervisor::AgentLimits;

/// Whether starting may wait for a free slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlotWait {
    /// Wait (the main agent's synchronous `Agent` calls).
    Wait,
    /// Fail at once when none is free: a child never waits while holding a
    /// slot (four parents waiting on four slots would deadlock), and a
    /// spawned agent's caller goes on working.
    Now,
}

/// Which pool of slots a child takes one from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pool {
    /// Synchronous `Agent` children (`agents.max_parallel`): the caller
    /// waits for them, so one message's calls should all run in one wave.
    Agent,
    /// Spawned children (`agents.max_concurrent`, seed 001's limit): they
    /// outlive the call, so fewer of them may run at once.
    Spawned,
}

/// A slot and a share of the tree budget, held for one submission.
pub(crate) struct Lease {
    _permit: OwnedSemaphorePermit,
    pub(crate) reservation: Reservation,
}

impl Lease {
    /// Charges the tree what the run used, refunds the rest of its share
    /// and gives the slot back (the permit is dropped with the lease).
    pub(crate) fn settle(self, tokens: u64, turns: u32) {
        self.reservation.settle(tokens, turns);
    }
}

/// The slots and the tree budget every child of a session leases from.
pub(crate) struct Leases {
    /// Slots of synchronous `Agent` children (`max_parallel`).
    agent: Arc<Semaphore>,
    /// Slots of spawned children and batch tasks (`max_concurrent`).
    pub(crate) spawned: Arc<Semaphore>,
    /// The budget of the whole tree, shared by every child's reservation.
    pub(crate) tree: Arc<TreeBudget>,
    max_parallel: usize,
    max_concurrent: usize,
}

impl Leases {
    pub(crate) fn new(limits: &AgentLimits) -> Leases {
        Leases {
            agent: Arc::new(Semaphore::new(limits.max_parallel.max(1))),
            spawned: Arc::new(Semaphore::new(limits.max_concurrent.max(1))),
            tree: Arc::new(TreeBudget::new(
                limits.tree_max_tokens,
                limits.tree_max_turns,
            )),
            max_parallel: limits.max_parallel,
            max_concurrent: limits.max_concurrent,
        }
    }

    /// Takes a slot from `pool` (waiting only with [`SlotWait::Wait`], until
    /// `cancel`) and then reserves a share of the tree budget for a child
    /// whose own limits are `tokens` and `turns`.
    pub(crate) async fn lease(
        &self,
        pool: Pool,
        tokens: Option<u64>,
        turns: u32,
        wait: SlotWait,
        cancel: &CancellationToken,
    ) -> Result<Lease, StartError> {
        let (slots, limit) = match pool {
            Pool::Agent => (&self.agent, self.max_parallel),
            Pool::Spawned => (&self.spawned, self.max_concurrent),
        };
        let limit_reached = |_| StartError::Slots { limit };
        let permit = match wait {
            SlotWait::Wait => tokio::select! {
                permit = slots.clone().acquire_owned() => permit.map_err(limit_reached)?,
                () = cancel.cancelled() => return Err(StartError::Cancelled),
            },
            SlotWait::Now => slots
                .clone()
                .try_acquire_owned()
                .map_err(|_| StartError::Slots { limit })?,
        };
        let reservation = self
            .tree
            .reserve(tokens, turns)
            .map_err(StartError::Budget)?;
        Ok(Lease {
            _permit: permit,
            reservation,
        })
    }
}
