//! Inbound dialects: the client-facing APIs the gateway speaks, one folder each.
//!
//! Each turns its API's request into the library's shared chat shape and the gateway's
//! answer (a reply, a stream of chunks, an error) back into its API's wire format. Only
//! OpenAI's Chat Completions today ([`chat`]).

pub mod chat;
