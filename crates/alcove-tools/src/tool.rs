//! The [`Tool`] trait every tool implements, and the two ways to
//! implement it: [`TypedTool`] (serves every caller) and [`ScopedTool`]
//! (needs its caller's type; declared with [`scoped_tool!`](crate::scoped_tool)).
//! A call is parsed and checked once, into a [`Prepared`] call.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Access, Invocation, ToolContext, ToolOutput, ToolSpec, Workspace, parse_input};

/// A capability the model can call, as dispatch and the tool pools hold it.
///
/// `Caller` is who calls: what a delegation tool is lent per call (in
/// `alcove-core`, the calling agent's scope). Tools that do not delegate
/// implement [`TypedTool`] and so serve every caller; a tool that needs its
/// caller implements [`ScopedTool`] for that caller's type and says so with
/// [`scoped_tool!`]. Either way a call is parsed and checked once, by
/// [`Tool::prepare`]: the [`Prepared`] call holds the tool's own validated
/// input (its paths resolved, its pattern compiled), and running it is what
/// the call does, so nothing is parsed or resolved again.
pub trait Tool<Caller: ?Sized + Sync = ()>: Send + Sync {
    /// The name, description and argument schema offered to the model.
    fn spec(&self) -> &ToolSpec;

    /// What calls of this tool can do.
    fn access(&self) -> Access;

    /// Whether calls may run at the same time as other concurrency-safe calls
    /// of the same assistant message.
    fn concurrency_safe(&self) -> bool;

    /// Whether a call changes text quoted from the file it names, so the
    /// caller must have read that file, as it is now, first (`Edit`):
    /// dispatch refuses the call otherwise, saying to Read it.
    fn needs_prior_read(&self) -> bool;

    /// Whether calls need the session's background commands
    /// ([`ToolContext::background`]); dispatch lends them only to such tools.
    fn uses_background(&self) -> bool {
        false
    }

    /// Parses and checks the arguments once: what the call would do (for
    /// the gate, hooks and approval) and the call, ready to run. An `Err` is
    /// the reason, returned to the model as an error result.
    fn prepare(&self, input: &Value, workspace: &Workspace)
    -> Result<Prepared<'_, Caller>, String>;
}

/// A call checked by [`Tool::prepare`]: what it would do, and the call itself.
pub struct Prepared<'a, Caller: ?Sized = ()> {
    /// What the call intends to do: what the gate decides on.
    pub invocation: Invocation,
    call: Box<dyn PreparedCall<Caller> + 'a>,
}

impl<'a, Caller: ?Sized + Sync> Prepared<'a, Caller> {
    /// The invocation and the call that carries it out.
    pub fn new(invocation: Invocation, call: impl PreparedCall<Caller> + 'a) -> Self {
        Prepared {
            invocation,
            call: Box::new(call),
        }
    }

    /// Does the work, for `caller`.
    pub async fn run(self, context: &ToolContext, caller: &Caller) -> ToolOutput {
        self.call.run(context, caller).await
    }
}

impl<Caller: ?Sized> std::fmt::Debug for Prepared<'_, Caller> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("invocation", &self.invocation)
            .finish_non_exhaustive()
    }
}

/// The work of one prepared call (see [`Prepared`]).
#[async_trait::async_trait]
pub trait PreparedCall<Caller: ?Sized>: Send {
    /// Does the work.
    async fn run(self: Box<Self>, context: &ToolContext, caller: &Caller) -> ToolOutput;
}

/// A tool that needs nothing of its caller: every built-in, MCP tool,
/// `TodoWrite`. It parses its arguments as `Input` (serde, with errors that
/// name the field), checks them in [`TypedTool::inspect`], which turns them
/// into the `Call` its [`TypedTool::call`] consumes (often `Input` itself,
/// or a [`FileCall`] with the path resolved), and is a [`Tool`] for every
/// caller.
///
/// The permission gate and hooks run between `inspect` and `call`;
/// failures the model can act on are [`ToolOutput::error`], never panics.
#[async_trait::async_trait]
pub trait TypedTool: Send + Sync {
    /// The arguments, as the model writes them.
    type Input: DeserializeOwned;
    /// What a checked call runs on.
    type Call: Send;

    /// The name, description and argument schema offered to the model.
    fn spec(&self) -> &ToolSpec;

    /// What calls of this tool can do.
    fn access(&self) -> Access;

    /// Whether calls may run at the same time as other concurrency-safe calls
    /// of the same assistant message.
    fn concurrency_safe(&self) -> bool {
        self.access() == Access::ReadOnly
    }

    /// Whether calls need the session's background commands
    /// ([`ToolContext::background`]): `Bash`, `BashOutput`, `KillShell`.
    fn uses_background(&self) -> bool {
        false
    }

    /// See [`Tool::needs_prior_read`].
    fn needs_prior_read(&self) -> bool {
        false
    }

    /// Checks the parsed arguments and says what the call would do; the
    /// `Call` is what [`TypedTool::call`] consumes.
    fn inspect(
        &self,
        input: Self::Input,
        workspace: &Workspace,
    ) -> Result<(Invocation, Self::Call), String>;

    /// Does the work.
    async fn call(&self, call: Self::Call, context: &ToolContext) -> ToolOutput;
}

/// A [`TypedTool`]'s checked call.
struct TypedCall<'a, T: TypedTool> {
    tool: &'a T,
    call: T::Call,
}

#[async_trait::async_trait]
impl<T: TypedTool, Caller: ?Sized + Sync> PreparedCall<Caller> for TypedCall<'_, T> {
    async fn run(self: Box<Self>, context: &ToolContext, _caller: &Caller) -> ToolOutput {
        let TypedCall { tool, call } = *self;
        tool.call(call, context).await
    }
}

impl<T: TypedTool, Caller: ?Sized + Sync> Tool<Caller> for T {
    fn spec(&self) -> &ToolSpec {
        TypedTool::spec(self)
    }

    fn access(&self) -> Access {
        TypedTool::access(self)
    }

    fn concurrency_safe(&self) -> bool {
        TypedTool::concurrency_safe(self)
    }

    fn needs_prior_read(&self) -> bool {
        TypedTool::needs_prior_read(self)
    }

    fn uses_background(&self) -> bool {
        TypedTool::uses_background(self)
    }

    fn prepare(
        &self,
        input: &Value,
        workspace: &Workspace,
    ) -> Result<Prepared<'_, Caller>, String> {
        let input = parse_input(&TypedTool::spec(self).name, input)?;
        let (invocation, call) = self.inspect(input, workspace)?;
        Ok(Prepared::new(invocation, TypedCall { tool: self, call }))
    }
}

/// A tool that acts for its caller (delegation: `Agent`, the collab and
/// batch tools; `WebFetch`, which asks the caller's gate): like
/// [`TypedTool`], but its call is given the `Caller` dispatch lends it, a
/// typed value, never state captured when the tool was built. Implement
/// it, then make the type a [`Tool`] for that caller with [`scoped_tool!`].
#[async_trait::async_trait]
pub trait ScopedTool<Caller: ?Sized + Sync>: Send + Sync {
    /// The arguments, as the model writes them.
    type Input: DeserializeOwned;
    /// What a checked call runs on.
    type Call: Send;

    /// The name, description and argument schema offered to the model.
    fn spec(&self) -> &ToolSpec;

    /// What calls of this tool can do.
    fn access(&self) -> Access;

    /// Whether calls may run at the same time as other concurrency-safe calls.
    fn concurrency_safe(&self) -> bool {
        self.access() == Access::ReadOnly
    }

    /// Checks the parsed arguments and says what the call would do.
    fn inspect(
        &self,
        input: Self::Input,
        workspace: &Workspace,
    ) -> Result<(Invocation, Self::Call), String>;

    /// Does the work for `caller`.
    async fn call(&self, call: Self::Call, context: &ToolContext, caller: &Caller) -> ToolOutput;
}

/// A [`ScopedTool`]'s checked call ([`scoped_tool!`] uses it).
#[doc(hidden)]
pub struct ScopedCall<'a, T: ScopedTool<Caller>, Caller: ?Sized + Sync> {
    /// The tool.
    pub tool: &'a T,
    /// Its checked input.
    pub call: T::Call,
}

#[async_trait::async_trait]
impl<T: ScopedTool<Caller>, Caller: ?Sized + Sync> PreparedCall<Caller>
    for ScopedCall<'_, T, Caller>
{
    async fn run(self: Box<Self>, context: &ToolContext, caller: &Caller) -> ToolOutput {
        let ScopedCall { tool, call } = *self;
        tool.call(call, context, caller).await
    }
}

/// Makes a [`ScopedTool`] a [`Tool`] for its caller: `scoped_tool!(AgentTool, AgentScope);`
/// (a blanket impl would overlap [`TypedTool`]'s).
#[macro_export]
macro_rules! scoped_tool {
    ($tool:ty, $caller:ty) => {
        impl $crate::Tool<$caller> for $tool {
            fn spec(&self) -> &$crate::ToolSpec {
                $crate::ScopedTool::<$caller>::spec(self)
            }

            fn access(&self) -> $crate::Access {
                $crate::ScopedTool::<$caller>::access(self)
            }

            fn concurrency_safe(&self) -> bool {
                $crate::ScopedTool::<$caller>::concurrency_safe(self)
            }

            fn needs_prior_read(&self) -> bool {
                false
            }

            fn prepare(
                &self,
                input: &$crate::JsonValue,
                workspace: &$crate::Workspace,
            ) -> ::std::result::Result<$crate::Prepared<'_, $caller>, String> {
                let name = &$crate::ScopedTool::<$caller>::spec(self).name;
                let input = $crate::parse_input(name, input)?;
                let (invocation, call) =
                    $crate::ScopedTool::<$caller>::inspect(self, input, workspace)?;
                Ok($crate::Prepared::new(
                    invocation,
                    $crate::ScopedCall { tool: self, call },
                ))
            }
        }
    };
}
