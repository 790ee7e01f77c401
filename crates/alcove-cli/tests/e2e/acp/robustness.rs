//! Malformed JSON-RPC, unknown methods and sessions, a client that goes away.
