//! Inbound dialects: the client-facing APIs the gateway speaks, one folder each.
//!
//! Each turns its API's request into the library's shared chat shape and the gateway's
//! answer (a reply, a stream of chunks, an error) back into its API's wire format. Only
//! OpenAI's Chat Completions ([`chat`]) and Embeddings ([`embeddings`], which maps to the
//! library's embedding shape instead).

pub mod chat;
pub mod embeddings;
