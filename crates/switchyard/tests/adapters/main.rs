//! The shared adapter suite: every vendor adapter against a wiremock server (and a raw
//! socket where a mock cannot hold a stream open), checking paths, headers, bodies and call
//! counts. No test calls a real vendor.
//!
//! `suite.rs` holds the cases and the [`suite::VendorHarness`] trait; `raw.rs` the sockets a
//! mock cannot fake. Each vendor has a file here implementing the harness (plus that
//! vendor's own HTTP-level tests) and fixtures under `tests/fixtures/<vendor>/`.
//!
//! To add a vendor: write `<vendor>.rs` with a `Harness`, add its fixtures (the table at
//! the top of `suite.rs`), declare the module below and add one `adapter_suite!` line. Run
//! one vendor with `cargo test -p switchyard --test adapters <vendor>_suite`.

// A test crate: helpers outside `#[test]` fns panic on purpose when a fixture is wrong.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod suite;

mod anthropic;
mod auth_answers;
mod azure;
mod bedrock;
mod bedrock_embed;
mod bedrock_platform;
mod count_tokens;
mod embeddings;
mod fanout;
mod fields;
mod gemini;
mod openai;
mod openai_responses;
mod raw;
mod vertex;
mod vertex_embeddings;

adapter_suite!(anthropic_suite, crate::anthropic::Harness);
adapter_suite!(azure_v1_suite, crate::azure::V1Harness);
adapter_suite!(azure_classic_suite, crate::azure::ClassicHarness);
adapter_suite!(azure_responses_v1_suite, crate::azure::ResponsesV1Harness);
adapter_suite!(
    azure_responses_classic_suite,
    crate::azure::ResponsesClassicHarness
);
adapter_suite!(bedrock_suite, crate::bedrock::Harness);
adapter_suite!(gemini_suite, crate::gemini::Harness);
adapter_suite!(openai_suite, crate::openai::Harness);
adapter_suite!(vertex_gemini_suite, crate::vertex::GeminiHarness);
adapter_suite!(vertex_claude_suite, crate::vertex::ClaudeHarness);
adapter_suite!(openai_responses_suite, crate::openai_responses::Harness);
